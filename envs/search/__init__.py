"""Search QA (``seed_gym/SearchQA-v0``): the Search-R1 protocol over pluggable retrievers.

``SearchQAEnv`` is the env; ``retrieval`` holds the retrievers (BM25, dense, remote), ``server``
the shared retrieval server, ``loaders`` the Search-R1 file formats, ``build`` the offline data.
"""

from seed_gym.envs.search.env import SearchQAEnv

__all__ = ["SearchQAEnv"]
