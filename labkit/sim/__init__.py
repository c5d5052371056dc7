"""The CPU simulator of the CUDA runtime: see runtime.py for what it covers and what not."""
