"""Hand-written nbdev-2 style setup: every setting and dependency is read from settings.ini."""
import shutil
from configparser import ConfigParser
from pathlib import Path

import setuptools
from setuptools.command.build_py import build_py

config = ConfigParser(delimiters=["="])
config.read(Path(__file__).parent / "settings.ini", encoding="utf-8")
cfg = config["DEFAULT"]

requirements = cfg.get("requirements", "").split()
dev_requirements = cfg.get("dev_requirements", "").split()
readme = Path(__file__).parent / "README.md"
here = Path(__file__).parent
# What the console commands need besides the code, copied into the wheel's bcl/ (found by bcl.resources after an install).
SHIPPED = {"templates": ["nbs/90_visualisation.ipynb", "nbs/91_table_cell.ipynb"],
           "params": sorted(str(p.relative_to(here)) for p in (here / "experiments" / "params").glob("*.yaml")),
           "cluster": ["experiments/cluster/jobqueue.yaml"]}


class BuildWithTemplates(build_py):
    "build_py that also copies the papermill templates, parameter files and the Slurm example into bcl/templates, bcl/params, bcl/cluster."
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads them from the checkout
            return
        for folder, files in SHIPPED.items():
            target = Path(self.build_lib) / "bcl" / folder
            target.mkdir(parents=True, exist_ok=True)
            for name in files:
                shutil.copy2(here / name, target / Path(name).name)

setuptools.setup(
    name=cfg.get("dist_name", cfg["lib_name"]),
    version=cfg["version"],
    description=cfg["description"],
    long_description=readme.read_text(encoding="utf-8") if readme.exists() else "",
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    license="MIT",
    keywords=cfg["keywords"],
    python_requires=f">={cfg['min_python']}",
    packages=setuptools.find_packages(include=["bcl", "bcl.*"]),
    include_package_data=True,
    install_requires=requirements,
    extras_require={"dev": dev_requirements},
    zip_safe=False,
    entry_points={"console_scripts": cfg.get("console_scripts", "").split()},
    cmdclass={"build_py": BuildWithTemplates},
    classifiers=[
        "Intended Audience :: Science/Research",
        "License :: OSI Approved :: MIT License",
        "Programming Language :: Python :: 3",
    ],
)
