"""The Colab notebook (content/notebooks/gpulab-colab.ipynb) checked as a learner runs it,
on this machine's CPU, by tests/wheel/run-ci.sh:

1. nbformat validates it against the notebook schema (version 4);
2. nbclient runs every cell in an ipykernel kernel of this Python (target/wheel-venv),
   with GPULAB_WHEEL naming the wheel CI just built (the install cell installs it), a
   free port, and no google.colab (so the Colab-only calls are skipped, as outside
   Colab): the server starts and answers /healthz, `gpulab doctor` prints its report,
   the progress file is written by `gpulab db backup`, and the server exits 0;
   while it serves, a student sets a display name over HTTP;
3. it runs again from scratch (its data folder removed, as a new Colab machine) with
   RESTORE = True: the progress file is restored before the server starts, and the same
   student's home page shows that name.

Usage: GPULAB_WHEEL=path/to/gpulab-*.whl python tests/wheel/notebook.py NOTEBOOK
"""

import http.cookiejar
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

import nbformat
from nbclient import NotebookClient

NAME = "notebook-ci learner"


def fail(message):
    print(f"notebook: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def text_of(cell):
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif "data" in out:
            parts.append(out["data"].get("text/plain", ""))
    return "".join(parts)


def cell_with(nb, needle):
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and needle in cell.source:
            return index
    fail(f"no code cell contains {needle!r}")


def pip_uninstall():
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "--quiet", "--yes", "gpulab"],
                   check=False, capture_output=True)


def run(path, workdir, restore, after_serve):
    nb = nbformat.read(path, as_version=4)
    settings = cell_with(nb, "RESTORE = False")
    if restore:
        nb.cells[settings].source = nb.cells[settings].source.replace("RESTORE = False", "RESTORE = True")
    serve = cell_with(nb, "/healthz")
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": workdir}})
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
            if index == serve:
                after_serve()
    return nb


def main():
    path = sys.argv[1]
    wheel = os.environ.get("GPULAB_WHEEL")
    if not wheel or not os.path.isfile(wheel):
        fail("GPULAB_WHEEL must name the wheel to install")
    nbformat.validate(nbformat.read(path, as_version=4))
    print(f"   ok   {path} is a valid notebook (nbformat {nbformat.__version__})")
    port = free_port()
    os.environ["GPULAB_PORT"] = str(port)
    base = f"http://127.0.0.1:{port}"
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def set_name():
        browser.open(f"{base}/", timeout=30).read()
        body = urllib.parse.urlencode({"display_name": NAME}).encode()
        browser.open(urllib.request.Request(f"{base}/me/name", data=body, method="POST"), timeout=30).read()

    seen = {}

    def read_name():
        seen["home"] = browser.open(f"{base}/", timeout=30).read().decode()

    workdir = tempfile.mkdtemp(prefix="gpulab-notebook.")
    pip_uninstall()  # the install cell must install this wheel, not find one there
    try:
        first = run(path, workdir, restore=False, after_serve=set_name)
        version = text_of(first.cells[cell_with(first, "sysconfig.get_path")])
        if not version.startswith("gpulab ") or os.path.dirname(sys.executable) not in version:
            fail(f"the install cell did not install gpulab into this kernel's Python: {version!r}")
        doctor = text_of(first.cells[cell_with(first, '[GPULAB, "doctor"]')])
        if "NVRTC" not in doctor:
            fail(f"`gpulab doctor` printed no report: {doctor[:300]!r}")
        stopped = text_of(first.cells[-1])
        if "exited with 0" not in stopped:
            fail(f"the server did not exit 0: {stopped!r}")
        progress = os.path.join(workdir, "gpulab-progress.db")
        if not os.path.isfile(progress):
            fail("the progress cell wrote no gpulab-progress.db")
        print(f"   ok   run to its end: {version.split(' at ')[0]}, doctor shown, progress saved ({os.path.getsize(progress)} bytes), exit 0")
        shutil.rmtree(os.path.join(workdir, "gpulab-data"))
        second = run(path, workdir, restore=True, after_serve=read_name)
        restored = text_of(second.cells[cell_with(second, "db\", \"restore\"")])
        if NAME not in seen.get("home", ""):
            fail(f"after the restore, the student's home page does not show their name (restore said: {restored[:300]!r})")
        print("   ok   run again with RESTORE = True on a fresh data folder: the same student's progress is back")
    finally:
        pip_uninstall()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
