"""What the tests share: graphs and stores built by hand, configs as Hydra composes them, the
datasets a test needs, MLflow stores and servers, planted faults and the `alone` marker. Test
modules import from here (and fixtures come from tests/conftest.py), never from each other."""
