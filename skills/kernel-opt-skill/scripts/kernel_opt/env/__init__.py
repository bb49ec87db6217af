"""What this machine has: GPU, toolchain, profilers, and what each step of the loop can do here."""
