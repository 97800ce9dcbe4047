"""SEED's parts: the analyzer (hindsight skills), the annotators (Stage 1's labels), rescoring
(teacher logprobs under the skill), the skill's measured effect, Stage 1 and the skill log; and
the ``seed`` algorithm built from them (``algorithm.py``)."""
