cmake -S . -B build
cmake --build build
ACCEL_SIM_DEVICES=2 ./build/hello
