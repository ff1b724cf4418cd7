# -*- Python -*-
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""lit configuration for hla's regression tests."""

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "HLA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".py", ".c", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hla_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "lib", "Inputs", "hla-capi-test.c", "consumer"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
# A sanitized build (scripts/sanitize.sh) passes its sanitizer options on;
# Python, which is not instrumented, preloads the sanitizer runtime that the
# artefacts it loads were linked against (and leaves leak checking to the
# tools: the interpreter keeps its objects to the end).
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LD_LIBRARY_PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# %preload_sanitizer goes before uninstrumented programs that load hla's
# libraries (Python, upstream mlir-opt with the plugin).
preload = ""
if config.hla_sanitize:
    config.available_features.add("sanitized")
    runtime = os.environ.get("HLA_SANITIZER_RUNTIME")
    if not runtime:
        lit_config.fatal("a sanitized build's tests need HLA_SANITIZER_RUNTIME "
                         "(run them through scripts/sanitize.sh)")
    asan = os.environ.get("ASAN_OPTIONS", "")
    preload = f"env LD_PRELOAD={runtime} ASAN_OPTIONS={asan}:detect_leaks=0"
config.substitutions.append(("%preload_sanitizer", preload))
config.substitutions.append(("%PYTHON", f"{preload} {config.python_executable}".strip()))
config.substitutions.append(("%hla_src_root", config.hla_src_root))
config.substitutions.append(("%hla_obj_root", config.hla_obj_root))
config.substitutions.append(
    ("%hla_plugin", os.path.join(config.hla_obj_root, "lib", "HLAPlugin.so")))
# For the install tests: building a project against the installed hla.
config.substitutions.append(("%cmake", config.cmake_command))
config.substitutions.append(("%make_program", config.cmake_make_program))
config.substitutions.append(("%cxx", config.cxx_compiler))
config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%mlir_dir", config.mlir_dir))
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(config.mlir_lib_dir, "libmlir_c_runner_utils.so")))

# Every FileCheck variable is scoped to its CHECK-LABEL block.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
config.environment["PYTHONPATH"] = os.path.join(config.hla_src_root, "python")

llvm_config.use_default_substitutions()

tool_dirs = [config.hla_tools_dir, config.llvm_tools_dir]
hla_opt_extra = []
# HLA_TEST_VERIFY_ROUNDTRIP=1 makes every hla-opt call also check that its
# output round-trips through the printer and parser.
if os.environ.get("HLA_TEST_VERIFY_ROUNDTRIP") == "1":
    hla_opt_extra.append("--verify-roundtrip")
tools = [
    ToolSubst("hla-opt", extra_args=hla_opt_extra, unresolved="fatal"),
    ToolSubst("not", unresolved="fatal"),
    ToolSubst("count", unresolved="fatal"),
    ToolSubst("hla-capi-test", unresolved="fatal"),
    "mlir-runner",
    "mlir-opt",
    "llvm-nm",
    "llvm-readelf",
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

if os.path.exists("/dev/nvidia0") or os.environ.get("HLA_HAVE_CUDA") == "1":
    config.available_features.add("cuda")
# The CUDA target compiles (PTX, ptxas) where the toolkit is; no GPU needed.
if config.enable_cuda in ("ON", "1", "TRUE", "True"):
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda_toolkit", config.cuda_toolkit))
if config.enable_integration_tests in ("ON", "1", "TRUE", "True"):
    config.available_features.add("integration")
