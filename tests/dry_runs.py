"""Dry runs of many ``python -m attnsvm.run`` command lines in one interpreter (test_docs.py):
each is the CLI's own entry point, ``attnsvm.run.cli``, with its arguments in ``sys.argv``; its
standard output and exit code are recorded. One interpreter instead of one per command: the
imports (Hydra, attnsvm) are paid once, not 60 times.

    python tests/dry_runs.py COMMANDS.json OUT.json   # COMMANDS: {name: [arg, ...]}
"""

from __future__ import annotations

import contextlib
import io
import json
import sys


def dry_run(args: list[str]) -> dict:
    from hydra.core.global_hydra import GlobalHydra

    import attnsvm.run

    sys.argv = ["attnsvm.run", *args]
    out, code = io.StringIO(), 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            attnsvm.run.cli()
    except SystemExit as exc:  # the CLI's own exit: a refused config, failed jobs
        code = exc.code if isinstance(exc.code, int) else 1
        if not isinstance(exc.code, int | None):
            out.write(str(exc.code))
    except Exception as exc:  # noqa: BLE001  (reported with the command's output)
        code = 1
        out.write(repr(exc))
    finally:
        GlobalHydra.instance().clear()
    return {"stdout": out.getvalue(), "returncode": code}


if __name__ == "__main__":
    commands_file, out_file = sys.argv[1:3]  # before dry_run sets sys.argv
    with open(commands_file) as f:
        commands = json.load(f)
    results = {name: dry_run(args) for name, args in commands.items()}
    with open(out_file, "w") as f:
        json.dump(results, f)
