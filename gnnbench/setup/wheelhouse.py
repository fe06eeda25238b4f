"""An offline wheelhouse: the wheels a machine without a package index needs to run gnnbench.

    python -m gnnbench wheelhouse --python 3.12 --platform manylinux_2_28_x86_64 \\
        --present target-packages.txt --out wheelhouse/

`--present` is the target's `python3 -m pip list --format=freeze` (name==version per line). The
target keeps what it has (above all its CUDA torch): pip resolves gnnbench's runtime
requirements for the target's Python and platform with every present package standing in as a
dependency-free placeholder pinned to its present version, and the wheelhouse holds the rest, each
wheel checked against the index's sha256. A present version that a new package cannot live with
stops the build in one line naming both.

MLflow comes as mlflow-skinny plus the SQLite store's SQLAlchemy and Alembic: the full `mlflow`
adds the web UI's server and assets (tens of MB), and a headless GPU node only writes runs; read
them where the UI runs (`gnnbench server`) or copy the store there.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import requires
from pathlib import Path

from gnnbench.errors import DataError, GnnbenchError
from gnnbench.process.atomic import atomic_directory, atomic_write_bytes, scratch_directory

BUDGET_MIB = 56.0  # what travels with the working tree to a device machine beside the code
MANIFEST = "wheelhouse.json"
# the tracking store without the UI server: mlflow -> mlflow-skinny + the SQLite store's needs
SUBSTITUTES = {"mlflow": ["mlflow-skinny{spec}", "sqlalchemy>=2", "alembic>=1.8"]}
PLACEHOLDER_LABEL = "gnnbenchpresent"  # a local version label no index serves
_FREEZE_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)$")
_REQUIREMENT_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(.*)$")


def normalized(name: str) -> str:
    """PEP 503's normal form of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_present(path: Path) -> dict[str, str]:
    """{normalized name: version} of a `pip list --format=freeze` file."""
    if not path.is_file():
        raise DataError(f"--present {path}: no such file (write it on the target with "
                        "`python3 -m pip list --format=freeze`)")  # fmt: skip
    present = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _FREEZE_LINE.match(line)
        if match is None:
            raise DataError(f"--present {path}:{number}: expected name==version, got {line!r} "
                            "(`pip freeze` writes 'name @ url' for some; use "
                            "`python3 -m pip list --format=freeze`)")  # fmt: skip
        present[normalized(match[1])] = match[2]
    return present


def runtime_requirements() -> list[str]:
    """gnnbench's own requirements without extras, with SUBSTITUTES applied."""
    found = []
    for requirement in requires("gnnbench") or []:
        if "extra ==" in requirement.replace('"', " ").replace("'", " "):
            continue
        name, spec = _REQUIREMENT_NAME.match(requirement).groups()
        found += [s.format(spec=spec) for s in SUBSTITUTES.get(normalized(name), [requirement])]
    return found


def placeholder_version(version: str) -> str:
    """The version a placeholder carries: the present one under a local label no index serves,
    so pip can only pick the placeholder and still compares it as the present version."""
    return f"{version}.{PLACEHOLDER_LABEL}" if "+" in version else f"{version}+{PLACEHOLDER_LABEL}"


def write_placeholders(present: dict[str, str], folder: Path) -> Path:
    """A dependency-free wheel per present package in `folder`, and the constraints file that
    pins each to it."""
    pins = []
    for name, version in present.items():
        stub = placeholder_version(version)
        dist = f"{name.replace('-', '_')}-{stub}"
        with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as wheel:
            info = f"{dist}.dist-info"
            wheel.writestr(f"{info}/METADATA",
                           f"Metadata-Version: 2.1\nName: {name}\nVersion: {stub}\n")  # fmt: skip
            wheel.writestr(
                f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
            )
            wheel.writestr(f"{info}/RECORD", "")
        pins.append(f"{name}=={stub}")
    constraints = folder / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    return constraints


def platform_tags(platform: str) -> list[str]:
    """pip matches --platform exactly: manylinux_2_N_<arch> also names every older glibc and the
    legacy aliases (manylinux2014 = 2_17, manylinux2010 = 2_12, manylinux1 = 2_5)."""
    match = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", platform)
    if match is None:
        return [platform]
    glibc, arch = int(match[1]), match[2]
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(glibc, 4, -1)]
    aliases = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    return tags + [f"{alias}_{arch}" for minor, alias in aliases.items() if minor <= glibc]


def target_options(python: str, platform: str) -> list[str]:
    options = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    for tag in platform_tags(platform):
        options += ["--platform", tag]
    return options


def _pip(arguments: list[str], what: str) -> None:
    completed = subprocess.run([sys.executable, "-m", "pip", *arguments, "--disable-pip-version-check"],
                               capture_output=True, text=True, check=False)  # fmt: skip
    if completed.returncode != 0:
        lines = [line for line in completed.stderr.splitlines() if line.strip()]
        why = " / ".join(line.strip() for line in lines[-4:]) or f"exit {completed.returncode}"
        raise GnnbenchError(f"wheelhouse: {what} failed: {why}")


def resolve(requirements: list[str], present: dict[str, str], options: list[str], scratch: Path,
            find_links: list[Path] = (), offline: bool = False) -> list[dict]:  # fmt: skip
    """pip's resolution of `requirements` (for the target where `options` name it, else for this
    interpreter), present packages as placeholders: the report's entries for what is not present
    (name, version, url, sha256)."""
    placeholders = scratch / "present"
    placeholders.mkdir(parents=True, exist_ok=True)
    constraints = write_placeholders(present, placeholders)
    report = scratch / "report.json"
    links = [arg for folder in [placeholders, *find_links] for arg in ("--find-links", str(folder))]
    _pip(["install", "--dry-run", "--quiet", "--ignore-installed", "--report", str(report),
          "--target", str(scratch / "target"), *options, *links, "-c", str(constraints),
          *(["--no-index"] if offline else []), *requirements], "resolving " + " ".join(requirements))  # fmt: skip
    wanted = []
    for item in json.loads(report.read_text())["install"]:
        metadata = item["metadata"]
        if PLACEHOLDER_LABEL in metadata["version"]:
            continue
        info = item["download_info"]
        wanted.append({"name": normalized(metadata["name"]), "version": metadata["version"],
                       "url": info["url"],
                       "sha256": info.get("archive_info", {}).get("hashes", {}).get("sha256")})  # fmt: skip
    return sorted(wanted, key=lambda entry: entry["name"])


def build_pure_wheels(requirements: list[str], present: dict[str, str], scratch: Path) -> Path:
    """Wheels built here for the requirements an index serves only as source (omegaconf's
    antlr4-python3-runtime 4.9.3, say): pip will not pick a source distribution for another
    platform, so each is resolved for this interpreter, built, and must come out pure Python."""
    built = scratch / "built"
    built.mkdir()
    host = scratch / "host"
    host.mkdir()
    for entry in resolve(requirements, present, [], host):
        if entry["url"].endswith(".whl"):
            continue
        _pip(["wheel", "--quiet", "--no-deps", "-w", str(built), f"{entry['name']}=={entry['version']}"],
             f"building {entry['name']} {entry['version']} from its source")  # fmt: skip
    for wheel in built.glob("*.whl"):
        if not wheel.name.endswith("-none-any.whl"):
            raise GnnbenchError(f"wheelhouse: {wheel.name} is not pure Python: the index has no "
                                "wheel of it for the target platform")  # fmt: skip
    return built


def download(wanted: list[dict], options: list[str], folder: Path) -> None:
    """Each resolved wheel into `folder`: from the index, verified against its sha256, or the
    one built here (build_pure_wheels)."""
    remote = [entry for entry in wanted if not entry["url"].startswith("file:")]
    for entry in wanted:
        if entry["url"].startswith("file:"):
            shutil.copy(entry["url"].removeprefix("file://"), folder)
    pinned = folder / "requirements.txt"
    pinned.write_text("".join(f"{entry['name']}=={entry['version']} --hash=sha256:{entry['sha256']}\n"
                              for entry in remote))  # fmt: skip
    _pip(["download", "--quiet", "--no-deps", "--require-hashes", "-d", str(folder), *options,
          "-r", str(pinned)], "downloading the wheels")  # fmt: skip
    pinned.unlink()


def mib(paths: list[Path]) -> float:
    return sum(path.stat().st_size for path in paths) / 2**20


def check_budget(wheels: list[Path], budget_mib: float) -> None:
    total = mib(wheels)
    if total > budget_mib:
        largest = sorted(wheels, key=lambda w: w.stat().st_size, reverse=True)[:3]
        raise GnnbenchError(f"wheelhouse: {total:.1f} MiB is over the --budget-mib {budget_mib:g} "
                            f"(largest: {', '.join(f'{w.name} {mib([w]):.1f} MiB' for w in largest)})")  # fmt: skip


def install_command(out: Path) -> str:
    """How the target installs it next to what it has, without an index."""
    return (
        f"python3 -m pip install --no-index --no-deps --target <dir> {out}/*.whl "
        "&& export PYTHONPATH=<dir>:$PYTHONPATH"
    )


def check_complete(
    folder: Path,
    requirements: list[str],
    present: dict[str, str],
    options: list[str],
    scratch: Path,
) -> None:
    """Resolve the requirements again without the index, from the present packages and `folder`
    alone: a wheel missing there fails here, not on the target."""
    missing = [entry for entry in resolve(requirements, present, options, scratch, [folder],
                                          offline=True)
               if not entry["url"].startswith(folder.resolve().as_uri())]  # fmt: skip
    if missing:
        raise GnnbenchError(f"wheelhouse: {folder} lacks {', '.join(e['name'] for e in missing)}")


def install(wheelhouse: Path, target: Path) -> Path:
    """The wheelhouse's wheels installed into `target` without an index (put it on the path)."""
    wheels = sorted(str(path) for path in wheelhouse.glob("*.whl"))
    if not wheels:
        raise GnnbenchError(f"wheelhouse {wheelhouse}: holds no wheels (build it with "
                            "`python -m gnnbench wheelhouse`)")  # fmt: skip
    _pip(["install", "--quiet", "--no-index", "--no-deps", "--no-compile", "--target", str(target),
          *wheels], f"installing {wheelhouse}")  # fmt: skip
    return target


def build(out: Path, python: str, platform: str, present_file: Path, budget_mib: float) -> Path:
    """Resolve, download and check the wheelhouse; `out` is replaced only when it is complete."""
    present = read_present(present_file)
    options = target_options(python, platform)
    if out.exists() and not (out / MANIFEST).is_file():
        raise GnnbenchError(f"--out {out}: exists and is not a wheelhouse (no {MANIFEST}); "
                            "give a new or empty folder")  # fmt: skip
    with scratch_directory("wheelhouse") as scratch:
        requirements = runtime_requirements()
        built = build_pure_wheels(requirements, present, Path(scratch))
        wanted = resolve(requirements, present, options, Path(scratch) / "target", [built])
        with atomic_directory(out) as folder:
            download(wanted, options, folder)
            wheels = sorted(folder.glob("*.whl"))
            check_budget(wheels, budget_mib)
            check_complete(folder, requirements, present, options, Path(scratch) / "offline")
            manifest = {"python": python, "platform": platform, "present": str(present_file),
                        "requirements": requirements, "wheels": wanted,
                        "mib": round(mib(wheels), 2)}  # fmt: skip
            atomic_write_bytes(folder / MANIFEST, json.dumps(manifest, indent=1).encode())
            # the older wheelhouse goes only now, when the new one is complete, and the folder
            # is renamed into its place on leaving this block (atomic_directory keeps an
            # existing one)
            shutil.rmtree(out, ignore_errors=True)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="gnnbench wheelhouse", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--python", default="3.12", help="the target's Python (major.minor)")
    parser.add_argument(
        "--platform", default="manylinux_2_28_x86_64", help="the target's wheel platform"
    )
    parser.add_argument(
        "--present", type=Path, required=True, help="the target's `pip list --format=freeze`"
    )
    parser.add_argument("--out", type=Path, required=True, help="the wheelhouse folder (replaced)")
    parser.add_argument(
        "--budget-mib", type=float, default=BUDGET_MIB, help="refuse a larger total"
    )
    args = parser.parse_args(argv)
    try:
        out = build(args.out, args.python, args.platform, args.present, args.budget_mib)
    except GnnbenchError as exc:
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        return 2
    manifest = json.loads((out / MANIFEST).read_text())
    print(
        f"{len(manifest['wheels'])} wheels, {manifest['mib']} MiB in {out}; install on the target:"
    )
    print(f"  {install_command(out)}")
    return 0
