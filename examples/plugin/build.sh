# In a copy of plugins/sim (sim.cpp, sim.map): rename the backend, build it
# against the installed accel_plugin.h alone (no libaccelcore to link).
sed -i 's/kBackendName = "sim"/kBackendName = "oot"/' sim.cpp
c++ -std=c++20 -O2 -fPIC -shared -fvisibility=hidden -pthread \
    $(pkg-config --cflags accel) -Wl,--version-script=sim.map \
    -o accel-oot.so sim.cpp

# Any directory on ACCEL_PLUGIN_PATH (absolute, not group/world-writable).
mkdir -p plugins && chmod 755 plugins && cp accel-oot.so plugins/
export ACCEL_PLUGIN_PATH=$PWD/plugins ACCEL_SIM_DEVICES=2  # the copy keeps sim's variables
accelctl backends
accel-conformance --backend oot
