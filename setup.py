"""Hand-written nbdev-2 style setup: every setting and dependency is read from settings.ini."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

config = ConfigParser(delimiters=["="])
config.read(Path(__file__).parent / "settings.ini", encoding="utf-8")
cfg = config["DEFAULT"]

requirements = cfg.get("requirements", "").split()
dev_requirements = cfg.get("dev_requirements", "").split()
readme = Path(__file__).parent / "README.md"

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
    classifiers=[
        "Intended Audience :: Science/Research",
        "License :: OSI Approved :: MIT License",
        "Programming Language :: Python :: 3",
    ],
)
