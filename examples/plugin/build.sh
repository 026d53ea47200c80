# In a copy of plugins/skeleton (skeleton.cpp, skeleton.map): rename the
# backend and its variable, build it against the installed headers alone
# (accel_plugin.h, accel_plugin_helpers.hpp; no libaccelcore to link).
sed -i 's/skeleton/oot/g; s/SKELETON/OOT/g' skeleton.cpp
c++ -std=c++20 -O2 -fPIC -shared -fvisibility=hidden \
    $(pkg-config --cflags accel) -Wl,--version-script=skeleton.map \
    -o accel-oot.so skeleton.cpp

# Any directory on ACCEL_PLUGIN_PATH (absolute, not group/world-writable).
mkdir -p plugins && chmod 755 plugins && cp accel-oot.so plugins/
export ACCEL_PLUGIN_PATH=$PWD/plugins ACCEL_OOT_DEVICES=2  # ACCEL_SKELETON_DEVICES, renamed
accelctl backends
accel-conformance --backend oot
