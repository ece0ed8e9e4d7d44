//! Paillier / Damgard-Jurik. TODO(helper).
