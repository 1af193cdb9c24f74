"""The simulation loop: the twin (physics on one clock), the scheduler, the closed loop of
owners, codec, buses and drives (Amber and Damiao), plan execution, fault injection and polite
interrupts; ``ideal``: a plan on an ideal robot's position servos, no CAN."""
