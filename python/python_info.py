"""Describes an interpreter for the Meson build: one `key=value` per line.

Meson 1.0's own python module needs distutils, which Python 3.12 removed;
this needs nothing but sysconfig.
"""

import sys
import sysconfig

paths = sysconfig.get_paths()
print(f"version={sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}")
print(f"include={paths['include']}")
print(f"platinclude={paths['platinclude']}")
print(f"ext_suffix={sysconfig.get_config_var('EXT_SUFFIX')}")
print(f"platlib={paths['platlib']}")
