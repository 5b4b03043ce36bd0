"""Your machine everywhere: save a measurement as a user GPU row that every explorer and command can use.

Taught in notebooks/measure_your_machine.ipynb (``roofline measure --save my-laptop``). The user table is
``gpus.toml`` in ``roofline.data.user_data_dir()``, outside the project, with the schema of
``data/gpus.toml``; ``roofline.data.gpus()`` appends its rows to the project's. A user id equal to a
project id, or within a typo of one (``h100`` would capture ``--gpu H100``, which should suggest
``h100-sxm``), is an error.

>>> import tempfile
>>> load_user_gpu_rows(Path(tempfile.mkdtemp()) / "gpus.toml")   # no file yet: no rows
[]
"""

from __future__ import annotations

import datetime
import json
import re
import tomllib
from pathlib import Path

from roofline import data
from roofline.errors import InvalidConfigurationError

from .bench import Measurement, machine_name

TABLE_NAME = "gpus.toml"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")
_HEADER = (
    "# Your own GPU rows for Speed Physics (same schema as the project's data/gpus.toml).\n"
    "# Written by `roofline measure --save NAME`; edit by hand if you like. Units as data/README.md says.\n"
)


def user_gpu_table_path() -> Path:
    """Path of the user's ``gpus.toml`` (it may not exist yet).

    >>> user_gpu_table_path().name
    'gpus.toml'
    """
    return data.user_data_dir() / TABLE_NAME


def load_user_gpu_rows(path: Path | None = None) -> list[dict]:
    """The user's GPU rows as raw TOML tables (the loader in ``roofline.data`` converts them); [] if none.
    A broken file raises ``InvalidConfigurationError`` naming the file."""
    path = Path(path) if path is not None else user_gpu_table_path()
    if not path.is_file():
        return []
    try:
        with open(path, "rb") as f:
            rows = tomllib.load(f).get("gpu", [])
    except tomllib.TOMLDecodeError as exc:
        raise InvalidConfigurationError(f"the user GPU table {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise InvalidConfigurationError(
            f"the user GPU table {path} is nested too deeply to be a table"
        ) from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "id" in r for r in rows):
        raise InvalidConfigurationError(f"the user GPU table {path} needs [[gpu]] tables, each with an id")
    return rows


def check_name(name: str, what: str = "a saved machine's name", example: str = "my-laptop") -> str:
    """A valid id for a learner's own row (``what``, for the message): lowercase letters, digits, ``.``,
    ``_``, ``-``; 1–40 characters, starting with a letter or digit; returned as is. No spaces, slashes,
    quotes or newlines, so the id is safe in a TOML key, a file name and a command line.

    >>> check_name("My Laptop!")
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: ...lowercase letters, digits...
    """
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise InvalidConfigurationError(
            f"{what} must be 1-40 characters of lowercase letters, digits, '.', '_' or '-', "
            f"starting with a letter or digit (like {example!r}); got {name!r}"
        )
    return name


def check_own_id(name: str, kind: str, project_ids, example: str) -> str:
    """``name`` for a learner's own ``kind`` row (``"GPU"``, ``"engine"``): it passes ``check_name`` and is
    neither one of ``project_ids`` (the project's ids and aliases) nor within a typo of one
    (``near_project_id``); ``example`` is a name to suggest. Returned as is.

    >>> check_own_id("vllm", "engine", ["vllm", "trtllm"], "my-vllm")
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: 'vllm' already names an engine in the project's table; ...
    >>> check_own_id("my-vllm", "engine", ["vllm", "trtllm"], "my-vllm")
    'my-vllm'
    """
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    check_name(name, f"{article} {kind}'s name of your own", example)
    project_ids = list(project_ids)
    if name in project_ids:
        raise InvalidConfigurationError(
            f"{name!r} already names {article} {kind} in the project's table; choose another name "
            f"(like 'my-{name}')"
        )
    close = near_project_id(name, project_ids)
    if close:
        raise InvalidConfigurationError(
            f"{name!r} is too close to the project's {kind} {close!r}: saved, '--{kind.lower()} {name}' "
            f"would pick it instead of suggesting {close!r}. Choose a name of your own, like {example!r}"
        )
    return name


def _squash(name: str) -> str:
    return re.sub(r"[-_.]", "", name)


def typo_distance(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) that turn ``a`` into ``b``.

    >>> typo_distance("h100-smx", "h100-sxm"), typo_distance("l40", "l4"), typo_distance("my-mac", "m4-max")
    (1, 1, 2)
    """
    previous, row = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        before, previous, row = previous, row, [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (ca != cb))
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[-1]


def near_project_id(name: str, project_ids) -> str | None:
    """The project GPU id ``name`` is within a typo of, or None: the same id without separators
    (``rtx4090``), a start of an id (``h100`` for ``h100-sxm``), or one edit away (``h100-smx``, ``l40``).

    >>> near_project_id("h100", ["h100-sxm", "h200"]), near_project_id("my-mac", ["m4-max"])
    ('h100-sxm', None)
    """
    squashed = _squash(name)
    for gpu_id in project_ids:
        target = _squash(gpu_id)
        if squashed == target or (len(squashed) >= 2 and target.startswith(squashed)):
            return gpu_id
        if typo_distance(name, gpu_id) <= 1:
            return gpu_id
    return None


def _project_gpu_ids() -> list[str]:
    """Ids of the project's GPU tables: the one in use (``$ROOFLINE_DATA_DIR`` if set) and the shipped one."""
    return list(dict.fromkeys([*data.load_gpus(data.data_dir()), *data.load_gpus(data.shipped_dir())]))


def check_destination(path: Path) -> Path:
    """``path``, unless it is in a folder of tables (``$ROOFLINE_DATA_DIR``, the shipped tables, or any
    folder with another project table in it, such as the repository's ``data/``).

    >>> check_destination(Path(str(data.shipped_dir())) / "gpus.toml")
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: refusing to write a saved machine into ...
    """
    folder = Path(path).resolve().parent
    tables = {Path(str(d)).resolve() for d in (data.data_dir(), data.shipped_dir())}
    # engines.toml and calibration.toml may be the user's own (roofline calibrate writes them there)
    others = ("models.toml", "prices.toml", "assumptions.toml")
    if folder in tables or any((folder / name).exists() for name in others):
        raise InvalidConfigurationError(
            f"refusing to write a saved machine into {folder}: it holds the project's data tables. "
            "Point SPEED_PHYSICS_HOME (or XDG_CONFIG_HOME) at a folder of your own"
        )
    return Path(path)


def check_save_name(name: str, path: Path | None = None) -> str:
    """``name`` once it passes ``check_name`` and is neither a project GPU id nor near one
    (``near_project_id``), with ``path`` outside the tables (``check_destination``). Called before
    measuring, so a bad name costs no time."""
    check_own_id(name, "GPU", _project_gpu_ids(), "my-laptop")
    check_destination(user_gpu_table_path() if path is None else Path(path))
    return name


def reload_tables() -> None:
    """Forget the cached GPU table so the next ``rl.gpus()`` / ``rl.get_gpu()`` reads the files again."""
    data.clear_cache()


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a valid TOML basic string


def measurement_row(name: str, measurement: Measurement, date: datetime.date | None = None) -> dict:
    """The ``[[gpu]]`` row for a ``bench.Measurement``, in the table's units (GB, TB/s, TFLOPS).

    >>> machine = Measurement(20e9, 100e9, 5.0, 1e-6, 50e9)
    >>> row = measurement_row("my-laptop", machine, datetime.date(2030, 1, 2))
    >>> row["memory_bandwidth_tb_per_s"], row["dense_tflops"], row["source"][-10:]
    (0.02, {'fp32': 0.1, 'fp64': 0.05}, '2030-01-02')
    """
    date = date or datetime.date.today()
    d = measurement.details
    stream = d.get("stream", {})
    stream_text = ", ".join(
        f"{k} {v['best_bytes_per_s'] / 1e9:.1f} GB/s best / {v['median_bytes_per_s'] / 1e9:.1f} median"
        for k, v in stream.items()
    )
    threads = measurement.threads
    return {
        "id": check_name(name),
        "name": f"{machine_name()} (measured)",
        "vendor": "measured",
        "form_factor": "CPU",
        "memory_gb": round(d.get("ram_bytes", float("nan")) / 1e9, 3),
        "memory_type": "system RAM",
        "memory_bandwidth_tb_per_s": measurement.memory_bandwidth_bytes_per_s / 1e12,
        "dense_tflops": {
            "fp32": measurement.matmul_flops_per_s / 1e12,
            "fp64": measurement.matmul_fp64_flops_per_s / 1e12,
        },
        "interconnect": "none",
        "interconnect_gb_per_s": 0.0,
        "power_w": 0.0,
        "source": f"measured on this machine by roofline measure, {date.isoformat()}",
        "note": (
            f"Measured with numpy ({'quick' if d.get('quick') else 'full'} run): memory bandwidth = best "
            f"streaming kernel ({stream_text}; STREAM byte counting); dense_tflops = best numpy matmul "
            f"(n x n, 2n^3 FLOP) in fp32 and fp64; {threads.get('cpu_count')} logical CPUs, BLAS "
            f"{threads.get('blas')}, threads {threads.get('blas_threads') or 'default (one per core)'}. "
            f"Load average {d.get('load_average_1min', float('nan')):.1f} during the run (other work lowers "
            f"every figure). memory_gb = this machine's RAM. No bf16/fp8 math measured: use fp32 weights. "
            f"interconnect and power not measured (0)."
        ),
    }


def save_user_gpu(name: str, measurement: Measurement, path: Path | None = None) -> Path:
    """Write (or replace) the row ``name`` in the user's GPU table (``check_save_name`` first); reload
    the tables; return the file's path."""
    path = Path(path) if path is not None else user_gpu_table_path()
    check_save_name(name, path)
    rows = [r for r in load_user_gpu_rows(path) if r["id"] != name]
    rows.append(measurement_row(name, measurement))
    path.parent.mkdir(parents=True, exist_ok=True)
    text = _HEADER + "".join(
        "\n[[gpu]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in row.items()) for row in rows
    )
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # atomic: a reader never sees half a file
    reload_tables()
    return path
