"""The course's own code: what the notebooks launch, decode and check.

* `workloads`: the small kernels every notebook uses (add_one, scale, busy, saxpy, chain) and
  the problem sizes that suit the active backend.
* `kernels_extra`: the kernels of particular notebooks (a fused add, a request pipeline).
* `decoder`: the capstone's tiny transformer decoder (kernels, model, generate, reference, and
  `decoder.whatif`, the same step priced at a real model's size).
* `device_loop`: the decoder as one WHILE graph (notebook 08), streaming or not, and k steps
  per launch; `decode_bench`: every way of running a generation, measured
  (``python -m labkit bench --decode``); `decode_costs`: the decoder's costs for the calibration.
* `show`: the course's own code, displayed in a notebook.
* `claims` and `reference`: each notebook's timing claims, and its one reference note.
* `exercises`: the automatic checks of the notebooks' exercises.

Nothing is imported here: ``from labkit.course import workloads`` loads only what it names.
"""
