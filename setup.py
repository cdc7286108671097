"""Build hook for the optional compiled parts; all metadata lives in setup.cfg.

``_speedups`` is optional: where no C compiler is found the build goes on without it
and the package runs its pure-Python twins (see ``scrapy_rep9309/rules/core.py``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "scrapy_rep9309.rules._speedups",
            sources=["scrapy_rep9309/rules/_speedups.c"],
            optional=True,
        )
    ]
)
