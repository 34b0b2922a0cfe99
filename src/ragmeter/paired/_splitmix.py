"""SplitMix64's constants (Steele, Lea and Flood 2014), shared by the fused bootstrap's stream
definition (``_fused``) and its compiled kernel (``_fused_kernel``)."""

#: the increment (the golden ratio in 64 bits) and the two mixing multipliers
GAMMA = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
