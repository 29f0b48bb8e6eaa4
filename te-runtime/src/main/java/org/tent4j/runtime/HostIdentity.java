package org.tent4j.runtime;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;

/** Which machine this is, and which address peers should use to reach it. */
final class HostIdentity {
    private HostIdentity() {
    }

    /** Boot id plus machine id: equal only for processes on one running host (a reboot changes it). */
    static String machineId() {
        String boot = read("/proc/sys/kernel/random/boot_id");
        String machine = read("/etc/machine-id");
        if (boot.isEmpty() && machine.isEmpty()) {
            try {
                return "host-" + InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                return "host-unknown";
            }
        }
        return boot + ":" + machine;
    }

    private static String read(String file) {
        try {
            return Files.readString(Path.of(file)).strip();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    /** The first up, non-loopback IPv4 address, else 127.0.0.1. */
    static String defaultHost() {
        try {
            for (NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (!nif.isUp() || nif.isLoopback() || nif.isVirtual()) {
                    continue;
                }
                for (InetAddress a : Collections.list(nif.getInetAddresses())) {
                    if (a instanceof Inet4Address && !a.isLoopbackAddress() && !a.isLinkLocalAddress()) {
                        return a.getHostAddress();
                    }
                }
            }
        } catch (SocketException e) {
            // fall through to loopback
        }
        return "127.0.0.1";
    }
}
