# The two commands a newcomer runs: `make book` and `make test`.
# Both create or refresh .venv from requirements.txt when it is missing or stale.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BUILD_OPTS ?= -W -n --keep-going

export PYTHONHASHSEED := 0
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help book test unit notebooks build-strict site-test student grade grade-bench bench lab clean

help:
	@echo "make book    build the website into _build/html"
	@echo "make test    unit tests + doctests, every notebook (nbval), strict book build, browser test"
	@echo "make student the student edition of every chapter, in _build/student/"
	@echo "make grade SUBMISSIONS=<folder>   autograde <folder>/<student>/<chapter>.ipynb (sandboxed;"
	@echo "             GRADE_OPTS=\"--jobs 4 ...\" passes options, see python -m coursework.grade --help)"
	@echo "make grade-bench  how long grading a class takes on this machine"
	@echo "make bench   benchmarks against statsmodels and scikit-learn"
	@echo "make lab     JupyterLab on the book"
	@echo "make clean   remove _build and caches (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --builder html

test: unit notebooks build-strict site-test

unit: $(STAMP)
	$(BIN)/python -m pytest tests blrlib --ignore=tests/site

notebooks: $(STAMP)
	$(BIN)/python -m pytest -o addopts="-p no:cacheprovider" --nbval-lax --nbval-current-env \
	    $$($(BIN)/python -m coursework.book)

build-strict: $(STAMP)
	$(BIN)/jupyter-book build . --builder html $(BUILD_OPTS)

# the built site in headless Chromium + checks of the HTML (after build-strict; tests/site)
site-test: $(STAMP)
	BOOK_SITE_REQUIRED=1 $(BIN)/python -m pytest -o addopts="-p no:cacheprovider" tests/site

student: $(STAMP)
	$(BIN)/python -m coursework.student _build/student

# each notebook runs in a bubblewrap sandbox (apt-get install bubblewrap); GRADE_OPTS adds options
grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=<folder> (<folder>/<student>/<chapter>.ipynb)"; exit 2; }
	$(BIN)/python -m coursework.grade "$(SUBMISSIONS)" --out _build/grades $(GRADE_OPTS)

# grades COPIES students x every chapter with the instructor's answers; prints the time per notebook
grade-bench: $(STAMP)
	$(BIN)/python -m coursework.bench --copies $(or $(COPIES),2) $(GRADE_OPTS)

bench: $(STAMP)
	$(BIN)/python bench/run.py

lab: $(STAMP)
	$(BIN)/jupyter lab book

clean:
	rm -rf _build .pytest_cache .jupyter_cache
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
