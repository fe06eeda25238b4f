"""User-facing errors: one line that names the file or key and what was expected."""


class GnnbenchError(Exception):
    """An expected mistake (bad file, bad config value, missing baseline): printed as one line."""


class ConfigError(GnnbenchError):
    """A config key holds an impossible or unknown value."""


class DataError(GnnbenchError):
    """A data file is missing, malformed or inconsistent."""
