#!/bin/sh
# A CPU OpenCL driver that can compile for this machine's CPU, where the system can give one.
#
# PyPI's PoCL (pocl-binary-distribution 3.0, what `ferro-opencl[pocl]` installs) carries LLVM 14,
# which cannot compile for CPUs newer than it (AMD's family 26, for one): there ferro-opencl reports
# itself unavailable, with that reason. Debian's and Ubuntu's PoCL is built on a newer LLVM; ferro
# finds it beside PyPI's. This installs it when it is missing and the machine lets us (root, apt-get);
# anywhere else it does nothing, and PyPI's PoCL serves as before.
set -u
[ -e /etc/OpenCL/vendors/pocl.icd ] && exit 0
command -v apt-get >/dev/null 2>&1 || exit 0
[ "$(id -u)" = 0 ] || exit 0
echo "installing Debian's PoCL (a CPU OpenCL driver) with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null && apt-get install -y -q pocl-opencl-icd >/dev/null || echo "apt-get could not install pocl-opencl-icd; PyPI's PoCL is used"
exit 0
