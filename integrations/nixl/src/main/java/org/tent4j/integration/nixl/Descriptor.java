package org.tent4j.integration.nixl;

/** One contiguous range {@code [address, address + length)} on device {@code devId}; its kind is its list's. */
public record Descriptor(long address, long length, int devId) {
    public Descriptor {
        if (length <= 0) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "descriptor length must be > 0, got " + length + " at 0x" + Long.toHexString(address));
        }
        if (address + length < address && address + length != 0) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "descriptor 0x" + Long.toHexString(address) + "+" + length + " wraps around");
        }
    }

    public long end() {
        return address + length;
    }

    /** Whether {@code other} lies inside this range on the same device. */
    public boolean covers(Descriptor other) {
        return devId == other.devId && other.address >= address && other.address - address <= length - other.length;
    }

    @Override
    public String toString() {
        return "0x" + Long.toHexString(address) + "+" + length + (devId == 0 ? "" : "@" + devId);
    }
}
