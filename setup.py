"""Build the fused training kernel (attnsvm/_fused.c); all other metadata is in pyproject.toml.

-ffp-contract=off keeps every multiply and add separately rounded, so trajectories do not
depend on whether the CPU has FMA; -fno-math-errno only lets sqrt compile to one instruction;
-Wno-psabi silences a note on 64-byte vector arguments of helpers that are always inlined.
tests/test_fused.py rebuilds the file with these flags for baseline x86-64 and compares bits.
The extension is optional: without a C compiler attnsvm installs and trains with torch.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "attnsvm._fused",
            sources=["attnsvm/_fused.c"],
            extra_compile_args=[
                "-O3",
                "-std=gnu11",
                "-ffp-contract=off",
                "-fno-math-errno",
                "-Wno-psabi",
            ],
            optional=True,
        )
    ]
)
