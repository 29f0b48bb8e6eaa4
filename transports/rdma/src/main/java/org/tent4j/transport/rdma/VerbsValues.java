package org.tent4j.transport.rdma;

import static org.tent4j.transport.rdma.Verbs.*;

/**
 * Verbs values as people and descriptors read them: work-completion status and port state names as verbs.h spells
 * them, path MTUs between bytes and {@code ibv_mtu}, and GIDs in the reference descriptor's text form.
 */
final class VerbsValues {
    private VerbsValues() {
    }

    /** The name of a work-completion status as verbs.h spells it. */
    static String wcStatusName(int status) {
        return status >= 0 && status < WC_STATUS_NAMES.size() ? WC_STATUS_NAMES.get(status)
                : "IBV_WC_STATUS_" + status;
    }

    static String portStateName(int state) {
        return switch (state) {
            case IBV_PORT_NOP -> "NOP";
            case IBV_PORT_DOWN -> "DOWN";
            case IBV_PORT_INIT -> "INIT";
            case IBV_PORT_ARMED -> "ARMED";
            case IBV_PORT_ACTIVE -> "ACTIVE";
            case IBV_PORT_ACTIVE_DEFER -> "ACTIVE_DEFER";
            default -> "STATE_" + state;
        };
    }

    /** {@code ibv_mtu} for a byte count; only the five IB MTUs exist. */
    static int mtuEnum(int bytes) {
        return switch (bytes) {
            case 256 -> IBV_MTU_256;
            case 512 -> IBV_MTU_512;
            case 1024 -> IBV_MTU_1024;
            case 2048 -> IBV_MTU_2048;
            case 4096 -> IBV_MTU_4096;
            default -> throw new IllegalArgumentException("path MTU must be 256, 512, 1024, 2048 or 4096, got "
                    + bytes);
        };
    }

    static int mtuBytes(int mtuEnum) {
        if (mtuEnum < IBV_MTU_256 || mtuEnum > IBV_MTU_4096) {
            throw new IllegalArgumentException("not an ibv_mtu value: " + mtuEnum);
        }
        return 128 << mtuEnum;
    }

    /** A GID the way the reference descriptor writes it: 16 lower-case hex pairs joined by ':'. */
    static String gidToString(byte[] gid) {
        if (gid.length != 16) {
            throw new IllegalArgumentException("a GID is 16 bytes, got " + gid.length);
        }
        StringBuilder sb = new StringBuilder(47);
        for (int i = 0; i < 16; i++) {
            if (i > 0) {
                sb.append(':');
            }
            sb.append(Character.forDigit((gid[i] >> 4) & 0xF, 16)).append(Character.forDigit(gid[i] & 0xF, 16));
        }
        return sb.toString();
    }

    static byte[] gidFromString(String text) {
        String[] parts = text.split(":", -1);
        if (parts.length != 16) {
            throw new IllegalArgumentException("GID '" + text + "' must be 16 hex pairs joined by ':'");
        }
        byte[] gid = new byte[16];
        for (int i = 0; i < 16; i++) {
            String p = parts[i];
            if (p.length() != 2 || Character.digit(p.charAt(0), 16) < 0 || Character.digit(p.charAt(1), 16) < 0) {
                throw new IllegalArgumentException("GID '" + text + "': '" + p + "' is not a hex pair");
            }
            gid[i] = (byte) Integer.parseInt(p, 16);
        }
        return gid;
    }

    static boolean isZeroGid(byte[] gid) {
        for (byte b : gid) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }
}
