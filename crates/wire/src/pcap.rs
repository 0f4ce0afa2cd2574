//! Capture files: pcap with ERF records (link type 197) or link type 247.
