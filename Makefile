# The two commands a newcomer runs: `make book` and `make test`.
# Both create or refresh .venv from requirements.txt when it is missing or stale.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BUILD_OPTS ?= -W -n --keep-going

# pytest workers for the unit tests and nbval (pytest-xdist; one test file or notebook per
# worker at a time, so a module's fixtures run once). TEST_JOBS=0 runs them in one process.
TEST_JOBS ?= 2
XDIST := $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile)

export PYTHONHASHSEED := 0
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help book test unit notebooks build-strict site-deps site-test screenshots student grade grade-bench gradescope bench lab pdf pdf-test clean python-check

help:
	@echo "make book    build the website into _build/html"
	@echo "make test    unit tests + doctests, strict book build (runs every notebook), browser test"
	@echo "make notebooks  every notebook through nbval (cell by cell; make test runs them in the build)"
	@echo "make screenshots  whole-page screenshots of every page at 1280 and 390 px (_build/screenshots/)"
	@echo "make student the student edition of every chapter, in _build/student/"
	@echo "make grade SUBMISSIONS=<folder>   autograde <folder>/<student>/<chapter>.ipynb (sandboxed;"
	@echo "             GRADE_OPTS=\"--jobs 4 ...\" passes options, see python -m coursework.grade --help)"
	@echo "make grade-bench  how long grading a class takes on this machine"
	@echo "make gradescope   the Gradescope autograder zip (CHAPTERS=05_laplace,06_predictive; SANDBOX=require;"
	@echo "             GRADESCOPE_PYTHON=3.12: the Python of the wheels it holds, kept in .cache/)"
	@echo "make bench   benchmarks against statsmodels and scikit-learn"
	@echo "make lab     JupyterLab on the student edition (_build/student); make lab BOOK=1: the book's notebooks"
	@echo "make pdf     the whole book as one PDF: _build/latex/book.pdf (also put beside the website)"
	@echo "make pdf-test  make pdf, then check the PDF (every chapter, figure and numbered equation)"
	@echo "make clean   remove _build and caches (keeps .venv)"

# the pinned requirements are tested with Python 3.11 only
python-check:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null || { \
	    echo "This book needs Python 3.11 to create .venv, but PYTHON='$(PYTHON)' is $$($(PYTHON) -c 'import platform; print("Python", platform.python_version())' 2>/dev/null || echo "not a working Python")."; \
	    echo "Install python3.11 (e.g. apt-get install python3.11 python3.11-venv) or run: make PYTHON=/path/to/python3.11 ..."; \
	    exit 1; }

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || { $(MAKE) --no-print-directory python-check && $(PYTHON) -m venv $(VENV); }
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { \
	    echo ".venv uses $$($(BIN)/python --version), not Python 3.11: remove .venv and run make again with Python 3.11."; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --builder html

# Checks that need a system tool missing here (bubblewrap, Chromium) are skipped, and the last
# step says so once, with the apt-get line that enables them (tests/_system.py); under CI
# (.ci/run: BOOK_SYSTEM_REQUIRED=1) such a check fails instead.
# Every notebook runs once, in the strict build (execute_notebooks: force, raise_on_error:
# every cell must run and every check cell's assertion hold); make notebooks runs them through
# nbval instead, in parallel, with a per-cell report.
test: $(STAMP)
	@$(BIN)/python tests/_system.py --clear
	@BOOK_SYSTEM_SUMMARY=make $(MAKE) --no-print-directory unit build-strict site-test
	@$(BIN)/python tests/_system.py

unit: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) tests blrlib coursework --ignore=tests/site

notebooks: $(STAMP)
	$(BIN)/python -m pytest -o addopts="-p no:cacheprovider" --nbval-lax --nbval-current-env $(XDIST) \
	    $$($(BIN)/python -m coursework.book)

build-strict: $(STAMP)
	$(BIN)/jupyter-book build . --builder html $(BUILD_OPTS)

# npm packages of the site tests (axe-core, the accessibility checker), in a folder of the
# repository's own; usable offline once installed. make site-test tries this first; without npm
# the accessibility test is skipped loudly (it is required where CI is set, as in .ci/run).
NODE_DIR := .cache/node
AXE_JS := $(NODE_DIR)/node_modules/axe-core/axe.min.js
site-deps: $(AXE_JS)
$(AXE_JS):
	@command -v npm >/dev/null || { echo "make site-deps needs npm (apt-get install -y npm)"; exit 1; }
	npm install --prefix $(NODE_DIR) --no-save --no-audit --no-fund --loglevel=error axe-core@4.14.1

# the built site in headless Chromium, the HTML, the student edition in JupyterLab (after
# build-strict; tests/site; the PDF's test runs in make pdf-test)
site-test: $(STAMP)
	-@$(MAKE) --no-print-directory site-deps
	BOOK_SITE_REQUIRED=1 $(BIN)/python -m pytest -o addopts="-p no:cacheprovider" tests/site --ignore=tests/site/test_pdf.py

# whole-page screenshots of every page at 1280 and 390 px in _build/screenshots/ (after make book)
screenshots: $(STAMP)
	# the screenshots are written whatever the checks find (make site-test reports those)
	-BOOK_SCREENSHOTS=full BOOK_SITE_REQUIRED=1 $(BIN)/python -m pytest -o addopts="-p no:cacheprovider" \
	    tests/site/test_browser.py -k "test_favicon" -q

student: $(STAMP)
	$(BIN)/python -m coursework.student _build/student

# each notebook runs in a bubblewrap sandbox (apt-get install bubblewrap); GRADE_OPTS adds options
grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=<folder> (<folder>/<student>/<chapter>.ipynb)"; exit 2; }
	$(BIN)/python -m coursework.grade "$(SUBMISSIONS)" --out _build/grades $(GRADE_OPTS)

# grades COPIES students x every chapter with the instructor's answers; prints the time per notebook
grade-bench: $(STAMP)
	$(BIN)/python -m coursework.bench --copies $(or $(COPIES),2) $(GRADE_OPTS)

# the Gradescope autograder bundle: setup.sh, run_autograder, the grader and your answers
gradescope: $(STAMP)
	$(BIN)/python -m coursework.gradescope build --out _build/gradescope/autograder.zip \
		$(if $(CHAPTERS),--chapters $(CHAPTERS)) $(if $(SANDBOX),--sandbox $(SANDBOX)) \
		$(if $(GRADESCOPE_PYTHON),--python $(GRADESCOPE_PYTHON))

bench: $(STAMP)
	$(BIN)/python bench/run.py

# JupyterLab opens the student edition (answers removed, in _build/student, where students work)
# unless BOOK=1 (the book's notebooks, with solutions); as root it needs --allow-root
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
# jupyterlab/settings/overrides.json: no pop-up asking about Jupyter's news feed on first start
LAB_OPTS += --LabApp.app_settings_dir=$(CURDIR)/jupyterlab/settings
lab: $(STAMP)
ifeq ($(BOOK),1)
	$(BIN)/jupyter lab $(LAB_ROOT) $(LAB_OPTS) book
else
	@# a student's notebooks in _build/student are kept: only chapters not there yet are added
	@rm -rf _build/.student-fresh && $(BIN)/python -m coursework.student _build/.student-fresh >/dev/null
	@mkdir -p _build/student && for f in _build/.student-fresh/*.ipynb; do \
	    if [ -e "_build/student/$${f##*/}" ]; then echo "kept   _build/student/$${f##*/} (make student rewrites it)"; \
	    else cp "$$f" _build/student/ && echo "added  _build/student/$${f##*/}"; fi; done; rm -rf _build/.student-fresh
	$(BIN)/jupyter lab $(LAB_ROOT) $(LAB_OPTS) _build/student
endif

# the whole-book PDF: Jupyter Book's LaTeX builder with XeLaTeX and latexmk (Debian: texlive-xetex,
# texlive-latex-extra, texlive-fonts-recommended, texlive-plain-generic, latexmk, fonts-freefont-otf,
# fonts-texgyre, fonts-texgyre-math;
# .ci/run installs them). It executes the notebooks like the website build.
PDF_NAME := bayesian-logistic-regression.pdf
pdf: $(STAMP)
	@command -v xelatex >/dev/null && command -v latexmk >/dev/null || { \
	    echo "make pdf needs XeLaTeX and latexmk: apt-get install -y texlive-xetex texlive-latex-extra texlive-fonts-recommended texlive-plain-generic latexmk fonts-freefont-otf fonts-dejavu-core fonts-texgyre fonts-texgyre-math"; exit 1; }
	@# figures at 300 dpi in the PDF: an IPython profile of the build's own (book/_ext/latex)
	@mkdir -p _build/ipython/profile_default && cp book/_ext/latex/ipython_kernel_config.py _build/ipython/profile_default/
	@# pandas tables up to the code frame's 88 characters in one block (as on the website)
	@mkdir -p _build/ipython/profile_default/startup && cp book/_ext/kernel_startup.py _build/ipython/profile_default/startup/
	@# the LaTeX build keeps its own Sphinx environment (_build/.doctrees-latex): in the shared
	@# _build/.doctrees an earlier website build counts as up to date, and the PDF was then
	@# written from the website's doctrees (no figures, equations numbered 1, 2, ...), and the
	@# other way round; the website's is put back whatever the PDF build's outcome (and at
	@# the start, if an interrupted PDF build left it aside)
	@set -e; mkdir -p _build; \
	if [ -d _build/.doctrees-html ]; then rm -rf _build/.doctrees-latex; \
	    if [ -d _build/.doctrees ]; then mv _build/.doctrees _build/.doctrees-latex; fi; \
	    mv _build/.doctrees-html _build/.doctrees; fi; \
	if [ -d _build/.doctrees ]; then mv _build/.doctrees _build/.doctrees-html; fi; \
	if [ -d _build/.doctrees-latex ]; then mv _build/.doctrees-latex _build/.doctrees; fi; \
	status=0; IPYTHONDIR=$(CURDIR)/_build/ipython $(BIN)/jupyter-book build . --builder pdflatex || status=$$?; \
	if [ -d _build/.doctrees ]; then mv _build/.doctrees _build/.doctrees-latex; fi; \
	if [ -d _build/.doctrees-html ]; then mv _build/.doctrees-html _build/.doctrees; fi; \
	exit $$status
	@mkdir -p _build/html && cp _build/latex/book.pdf _build/html/$(PDF_NAME)
	@echo "PDF: _build/latex/book.pdf (and _build/html/$(PDF_NAME), the website's download menu)"

pdf-test: pdf
	BOOK_PDF_REQUIRED=1 $(BIN)/python -m pytest -o addopts="-p no:cacheprovider" tests/site/test_pdf.py

clean:
	rm -rf _build .pytest_cache .jupyter_cache
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
