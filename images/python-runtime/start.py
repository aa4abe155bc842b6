# Starts the runtime as a module, so that its compiled form is used: a script run by name is
# compiled again at every start, which a cold start pays for.
import importlib.util

spec = importlib.util.spec_from_file_location("_minik8s_runtime", "/opt/minik8s/runtime.py")
runtime = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runtime)
runtime.main()
