"""Build the fused training kernel (attnsvm/kernel/_fused.c); other metadata: pyproject.toml.

-ffp-contract=off keeps every multiply and add separately rounded, so trajectories do not
depend on whether the CPU has FMA; -fno-math-errno only lets sqrt compile to one instruction;
-Wno-psabi silences a note on 64-byte vector arguments of helpers that are always inlined.
tests/test_fused.py rebuilds the file with these flags for baseline x86-64 and compares bits.
Two builds of the one source (see its header): 8 lanes for AVX-512, 4 lanes for the rest.
Both are optional: without a C compiler attnsvm installs and trains with torch.
"""

import platform

from setuptools import Extension, find_packages, setup

FLAGS = ["-O3", "-std=gnu11", "-ffp-contract=off", "-fno-math-errno", "-Wno-psabi"]


def kernel(name: str, macros: list) -> Extension:
    return Extension(
        f"attnsvm.kernel.{name}",
        sources=["attnsvm/kernel/_fused.c"],
        define_macros=macros,
        extra_compile_args=FLAGS,
        optional=True,
    )


extensions = [kernel("_fused", [])]  # 4 lanes: AVX2 and baseline clones, any CPU
if platform.machine().lower() in ("x86_64", "amd64"):
    extensions.append(kernel("_fused_v4", [("ATTNSVM_V4", "1")]))  # 8 lanes, AVX-512 CPUs

# every package of attnsvm and its Hydra plug-ins, and conf/ shipped as attnsvm.conf
# (pyproject.toml's package-dir)
PACKAGES = [
    *find_packages(include=["attnsvm", "attnsvm.*"]),
    "hydra_plugins",  # a namespace package that Hydra scans for launchers
    *(f"hydra_plugins.{p}" for p in find_packages(where="hydra_plugins")),
]

setup(ext_modules=extensions, packages=[*PACKAGES, "attnsvm.conf"])
