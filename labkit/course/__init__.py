"""The course's own code: what the notebooks launch, decode and check.

* `workloads`: the small kernels every notebook uses (add_one, scale, busy, saxpy, chain) and
  the problem sizes that suit the active backend.
* `kernels_extra`: the kernels of particular notebooks (a fused add, a request pipeline).
* `decoder`: the capstone's tiny transformer decoder (kernels, model, generate, reference).
* `exercises`: the automatic checks of the notebooks' exercises.

Nothing is imported here: ``from labkit.course import workloads`` loads only what it names.
"""
