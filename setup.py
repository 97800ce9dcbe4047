"""Map the top-level folders envs/, wrappers/, trainer/ into the seed_gym namespace.

Metadata lives in pyproject.toml; this file only computes the package list, which
pyproject's static `package-dir` cannot do for sub-packages of a remapped folder.
"""

from setuptools import find_packages, setup

PACKAGE_DIRS = {
    "seed_gym": "seed_gym",
    "seed_gym.envs": "envs",
    "seed_gym.wrappers": "wrappers",
    "seed_gym.trainer": "trainer",
}

packages = []
for package, folder in PACKAGE_DIRS.items():
    packages.append(package)
    packages += [f"{package}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=PACKAGE_DIRS)
