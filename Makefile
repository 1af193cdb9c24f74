# rob-twin: every target sets up .venv itself on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export MUJOCO_GL ?= egl

.PHONY: setup demo test stress fuzz bench mbm-data lint clean chromium xvfb

# gym-aloha is test data: ALOHA's bimanual ViperX MJCF for tests/test_third_robot.py. Installed
# with --no-deps because it pins mujoco < 3.9 (and pulls gymnasium); the test reads only its
# assets folder and never imports the package.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pip install --quiet --no-deps gym-aloha==0.1.5
	touch $(STAMP)

setup: $(STAMP)

# The teleop browser test drives Debian's chromium; install it when missing and root,
# otherwise that test skips and says why.
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq chromium) || echo "chromium not installed (not root or apt failed): the teleop browser test will skip"; }

demo: $(STAMP)
	$(VENV)/bin/rob-twin demo

# The viewer tests need a virtual X server (Debian package xvfb): installed here when make
# runs as root with apt-get; otherwise those tests are skipped (with their reason).
xvfb:
	@command -v xvfb-run >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get install -y -q xvfb >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q xvfb >/dev/null 2>&1; } || \
	    echo "xvfb could not be installed: the viewer tests will be skipped"; \
	  else echo "xvfb not installed (not root or no apt-get): the viewer tests will be skipped"; fi; }

# Bytecode caches on even where the machine sets PYTHONDONTWRITEBYTECODE (this one does):
# otherwise every worker rewrites every test module's asserts and every `rob-twin`
# subprocess compiles the package again (about 7 s a worker and 0.2 s a subprocess)
PYTEST_ENV := env -u PYTHONDONTWRITEBYTECODE
# worksteal: an idle worker takes tests from the other's queue, so one long file (the
# journeys) does not leave a worker idle at the end as whole-file scheduling did
test: $(STAMP) chromium xvfb
	$(PY) -m ruff check cli twin controllers planners experiments tests models examples
	$(PY) -m ruff format --check cli twin controllers planners experiments tests models examples
	$(PYTEST_ENV) $(PY) -m pytest -n 2 --dist worksteal

stress: $(STAMP)
	ROB_TWIN_STRESS=1 $(PY) -m pytest -m stress

# The real-time tests (marker `realtime`: deadlines, rates, readiness on the wall clock) with
# BURNERS busy processes beside them (scripts/cpu_burner.py), as on a loaded 2-core desktop.
# Each test measures the machine's jitter first (tests/realtime_support.py) and widens its
# deadlines by it, or skips saying why; the burners stop with this recipe's shell.
BURNERS ?= 2
.PHONY: test-under-load
test-under-load: $(STAMP) chromium xvfb
	@$(PY) scripts/cpu_burner.py -n $(BURNERS) & burner=$$!; \
	$(PYTEST_ENV) $(PY) -m pytest -m realtime -rs; rc=$$?; \
	kill $$burner; wait $$burner; exit $$rc

# A longer seeded campaign over the outward surfaces (control port, teleop messages, plan
# files and certify, replay sidecars, socketcand, study specs and options, RobEnv,
# calibration, robot, scenario and goals files, parquet episodes); FUZZ_SEED reproduces a
# finding. Outcome counts per surface are printed at the end and written to FUZZ_TALLY.
FUZZ_SEED ?= 1
FUZZ_TALLY ?= out/fuzz/tally.json
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz FUZZ_TALLY=$(FUZZ_TALLY) $(PY) -m pytest -m fuzz \
	  --hypothesis-seed=$(FUZZ_SEED) -W ignore::hypothesis.errors.HypothesisWarning

# the bench extra brings OMPL, the planner benchmark's peer (not needed by `make test`)
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) mbm-data
	$(PY) -m rob_twin.experiments.bench

# the mbm benchmark's data: the pinned vamp-planner sdist (Baxter and MotionBenchMaker's
# problems), fetched from the package index into ~/.cache/rob-twin/vamp, hash-checked; a
# setup step like installing a dependency, so the benchmarks themselves stay offline
mbm-data: $(STAMP)
	$(PY) -m rob_twin.experiments.mbm_loader

# MotionBenchMaker's Baxter bookshelf problems (issue 47): fetches the pinned vamp-planner
# sdist into ~/.cache/rob-twin/vamp; 200 problems per set (MBM_PER_SET), about 25 min
.PHONY: bench-mbm
bench-mbm: $(BENCH_STAMP) mbm-data
	$(PY) -m rob_twin.experiments.bench mbm free-filter

lint: $(STAMP)
	$(PY) -m ruff check cli twin controllers planners experiments tests models examples
	$(PY) -m ruff format --check cli twin controllers planners experiments tests models examples

clean:
	rm -rf out .pytest_cache

# LeRobot's OpenArm follower against the twin (README "Your OpenArm software against the
# twin"): its own venv, since lerobot 0.6.1 needs Python >= 3.12 and rob-twin's .venv is 3.11.
# lerobot without its dependencies, then only what its Damiao bus and OpenArm follower import:
# python-can, numpy, draccus, huggingface-hub, tqdm, packaging and torch (imported at the top
# of lerobot_types.py; PyPI has only CUDA builds for Python 3.12: the venv is 4.7 GB with its
# nvidia libraries, 1.5 min to install here). pip then lists lerobot's other requirements as
# missing: the OpenArm follower never imports them. Then what its dataset module imports
# (LeRobotDataset.create/add_frame/save_episode/finalize and its reader, no videos): datasets,
# pandas, pyarrow, av, torchvision, safetensors, Pillow, einops, gymnasium. Not part of
# `make setup` or `make test`: the LeRobot tests skip without it.
LEROBOT_VENV := .venv-lerobot
LEROBOT_STAMP := $(LEROBOT_VENV)/.installed-datasets
PYTHON312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12.*/bin/python3.12 python3.13; do \
  "$$p" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && { echo "$$p"; break; }; done)

.PHONY: lerobot-venv check-lerobot lerobot-fixture

$(LEROBOT_STAMP):
	@test -n "$(PYTHON312)" || { echo "make lerobot-venv: no Python >= 3.12 found (lerobot 0.6.1 needs it); name one: make lerobot-venv PYTHON312=/path/to/python3.12"; exit 1; }
	test -x $(LEROBOT_VENV)/bin/python || $(PYTHON312) -m venv $(LEROBOT_VENV)
	echo '*' > $(LEROBOT_VENV)/.gitignore
	$(LEROBOT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LEROBOT_VENV)/bin/python -m pip install --quiet --no-deps lerobot==0.6.1
	$(LEROBOT_VENV)/bin/python -m pip install --quiet python-can==4.6.1 numpy==2.2.6 \
	  draccus==0.11.6 'huggingface-hub>=1.6,<2' 'tqdm>=4.66,<5' 'packaging>=24.2,<26' torch==2.11.0
	$(LEROBOT_VENV)/bin/python -m pip install --quiet datasets==4.8.5 pandas==2.3.3 pyarrow==26.0.1 \
	  av==15.1.0 torchvision==0.26.0 safetensors==0.8.0 'Pillow>=10,<13' einops==0.8.2 gymnasium==1.4.0
	touch $(LEROBOT_STAMP)

lerobot-venv: $(LEROBOT_STAMP)

# tests/data/lerobot_v3_openarm: 6 s of both OpenArm arms in the twin (simulated), written as a
# LeRobot v3 dataset by LeRobot's own writer (its README says how)
lerobot-fixture: $(STAMP) $(LEROBOT_STAMP)
	mkdir -p out
	$(VENV)/bin/python scripts/twin_openarm_trajectory.py out/openarm_twin_trajectory.npz \
	  --hidden tests/data/lerobot_v3_openarm/hidden.json
	rm -rf out/lerobot_v3_openarm
	$(LEROBOT_VENV)/bin/python scripts/write_lerobot_fixture.py out/openarm_twin_trajectory.npz \
	  out/lerobot_v3_openarm
	rm -rf tests/data/lerobot_v3_openarm/data tests/data/lerobot_v3_openarm/meta
	cp -r out/lerobot_v3_openarm/data out/lerobot_v3_openarm/meta tests/data/lerobot_v3_openarm/

# LeRobot's BiOpenArmFollower (both arms) drives `rob-twin bank --robot openarm` over
# socketcand: connect, observe, reach goals; prints a one-line verdict, exit 0/1
check-lerobot: $(STAMP) $(LEROBOT_STAMP)
	$(LEROBOT_VENV)/bin/python scripts/check_lerobot.py --rob-twin $(VENV)/bin/rob-twin
