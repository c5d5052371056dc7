"""The words of the course's timing claims, one module per notebook (``nb01`` … ``nb10``).

Each claim is a small function made with `labkit.measure.claims.claim`: it takes the learner's
measured figures, decides whether the claim holds, and says what was measured. A notebook calls
it in one line (``claims.graph_cheaper_per_kernel(eager_us, graph_us)``); strict mode (tests, CI)
raises when it fails, learner mode shows a note and goes on.

Nothing is imported here: ``from labkit.course.claims import nb01 as claims``.
"""
