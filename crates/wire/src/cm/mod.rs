//! Communication Manager messages (IBA 1 §12.6).
