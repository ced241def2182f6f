//! The built-in simulated inference server (`ttftbench serve`, `demo`, tests).
