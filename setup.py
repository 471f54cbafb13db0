"""Build the compiled parts of segtools: every ``.pyx`` under ``segtools/`` is one extension.

Cython turns each into C, compiled by the platform's C compiler when the package is built
(``pip install .``, or ``pip install -e .`` which builds in place). Nothing compiles at run time,
so a read-only install starts as fast as any other, and no JIT is imported.
"""

from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

ROOT = Path(__file__).parent


def extensions() -> list[Extension]:
    # Cython follows a .pyx's own `cdef extern from` header, not the headers that one
    # includes (checksum.h includes crc32c_fold.h): every header is named, so a change to
    # any rebuilds the extensions.
    headers = [str(h.relative_to(ROOT)) for h in sorted(ROOT.glob("segtools/**/*.h"))]
    out = []
    for pyx in sorted(ROOT.glob("segtools/**/*.pyx")):
        rel = pyx.relative_to(ROOT)
        out.append(Extension(
            ".".join(rel.with_suffix("").parts), [str(rel)],
            include_dirs=[numpy.get_include(), "segtools"], depends=headers,
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            extra_compile_args=["-O3", "-fno-strict-aliasing"]))
    return out


setup(ext_modules=cythonize(
    extensions(), language_level=3,
    compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True,
                         "initializedcheck": False, "embedsignature": True}))
