"""What the rules know about a plan, derived from it and kept apart from the rules that
use it (DataFusion keeps its ordering analysis so): one module per analysis.

- :mod:`sparkext.analysis.ordering`: constants, equivalences and orderings of a node's rows;
- :mod:`sparkext.analysis.uniqueness`: unique keys;
- :mod:`sparkext.analysis.constraints`: the predicates every row of a node satisfies;
- :mod:`sparkext.analysis.needed`: which columns each node needs of its children;
- :mod:`sparkext.analysis.evaluation`: the constant folder and the three-valued evaluator
  (null rejection).

The analyses stand on the mirror (``sparkext.plan``, ``sparkext.expressions``) and the
predicate vocabulary (``sparkext.predicates``); the rules stand on them, never the reverse
(``tests/test_imports.py``). A rule asks an analysis rather than deriving a fact itself.
"""
