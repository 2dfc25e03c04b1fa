"""The tiny training command line the CLI tests share (one place: tests/test_cli.py and
tests/test_fuzz_cli.py build their argv from it)."""

#: The model of the tiny run: d = 2, L = 2, C = 8, n in [4, 6].
SHAPE = ("--d", "2", "--L", "2", "--C", "8", "--n-min", "4", "--n-max", "6")
#: Two steps of batch 4 on the CPU, quietly: seconds.
TINY = ("--steps", "2", "--lr", "1e-3", "--batch-size", "4", "--no-progress", "--device", "cpu")


def train_argv(run_dir, *extra) -> list[str]:
    """``pfntheory train`` of the tiny RBF run into ``run_dir``, then ``extra``."""
    return ["train", "--run-dir", str(run_dir), "--task", "rbf", *SHAPE, *TINY, *extra]


def train_shape(run_dir, *options, task: str = "rbf") -> list[str]:
    """``pfntheory train --run-dir RUN_DIR --task TASK OPTIONS`` and the tiny model, without the
    training options (for command lines refused before any work)."""
    return ["train", "--run-dir", str(run_dir), "--task", task, *options, *SHAPE]
