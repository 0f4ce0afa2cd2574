//! Management datagram common header and RMPP fields (IBA 1 §13.4).
