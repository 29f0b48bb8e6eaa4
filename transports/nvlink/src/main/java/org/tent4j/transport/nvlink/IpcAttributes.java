package org.tent4j.transport.nvlink;

import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/**
 * What nvlink publishes for one device buffer: the platform's IPC handle (base64), the platform id, the device
 * ordinal in the exporting process, and the device's PCI bus id, which lets an importer whose device numbering
 * differs ({@code CUDA_VISIBLE_DEVICES}) open the handle on the same physical device.
 *
 * @param handle   the bytes {@link org.tent4j.spi.platform.DevicePlatform#exportIpcHandle} returned
 * @param platform platform id: {@code cuda}, {@code rocm}, {@code ascend}
 * @param device   device ordinal in the exporting process
 * @param pciBusId PCI bus id of that device, or empty
 */
record IpcAttributes(byte[] handle, String platform, int device, String pciBusId) {
    static final String IPC = "ipc";
    static final String PLATFORM = "platform";
    static final String DEVICE = "device";
    static final String PCI = "pci";

    Map<String, String> encode() {
        Map<String, String> out = new LinkedHashMap<>();
        out.put(IPC, Base64.getEncoder().encodeToString(handle));
        out.put(PLATFORM, platform);
        out.put(DEVICE, Integer.toString(device));
        if (!pciBusId.isEmpty()) {
            out.put(PCI, pciBusId);
        }
        return out;
    }

    /** Parses what a peer published; {@code what} names the buffer in errors. */
    static IpcAttributes decode(Map<String, String> attributes, String what) {
        String ipc = attributes.get(IPC);
        String platform = attributes.get(PLATFORM);
        String device = attributes.get(DEVICE);
        if (ipc == null || platform == null || device == null) {
            throw new TransferException(ErrorCode.PROTOCOL, what + " carries no complete nvlink IPC attributes"
                    + " (need ipc, platform, device; got " + attributes.keySet() + ")");
        }
        try {
            return new IpcAttributes(Base64.getDecoder().decode(ipc), platform, Integer.parseInt(device),
                    attributes.getOrDefault(PCI, ""));
        } catch (IllegalArgumentException e) {
            throw new TransferException(ErrorCode.PROTOCOL, what + " has malformed nvlink attributes " + attributes
                    + ": " + e.getMessage(), e);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcAttributes a && java.util.Arrays.equals(handle, a.handle) && platform.equals(a.platform)
                && device == a.device && pciBusId.equals(a.pciBusId);
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(handle) * 31 + platform.hashCode() * 7 + device;
    }

    @Override
    public String toString() {
        return platform + ":" + device + (pciBusId.isEmpty() ? "" : " (" + pciBusId + ")") + " handle " + handle.length + " bytes";
    }
}
