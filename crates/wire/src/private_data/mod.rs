//! Private data of connection requests: IPoIB-CM, Annex A11 IP CM service, iWarp emulation.
