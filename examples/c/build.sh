cc -std=c99 -Wall -Wextra -o hello hello.c $(pkg-config --cflags --libs accel)
ACCEL_SIM_DEVICES=2 ./hello
