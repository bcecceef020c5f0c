// A runaway program: execgate stops it at the policy's wall-time limit and answers `timeout`.
while (true) {}
