package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Whether this machine has an RDMA device with an ACTIVE port, and if not, precisely why. Opens each device only to
 * read its port states, then closes it.
 */
final class DeviceProbe {
    private DeviceProbe() {
    }

    /** {@code null} when some device has an active port; otherwise the reason, as one line. */
    static String unavailability(VerbsLibrary verbs) {
        VerbsLibrary.DeviceList list = verbs.getDeviceList();
        if (list.failed()) {
            return noDevices(verbs, list);
        }
        try {
            if (list.count() == 0) {
                return "no RDMA devices: ibv_get_device_list returned an empty list";
            }
            List<String> states = new ArrayList<>();
            for (int i = 0; i < list.count(); i++) {
                String name = verbs.deviceName(list.device(i));
                try {
                    MemorySegment context = verbs.openDevice(list.device(i), name);
                    try {
                        int ports = RdmaDevice.queryLimits(verbs, context, name).physPortCount();
                        for (int port = 1; port <= ports; port++) {
                            int state = portState(verbs, context, name, port);
                            if (state == Verbs.IBV_PORT_ACTIVE) {
                                return null;
                            }
                            states.add(name + " port " + port + " " + VerbsValues.portStateName(state));
                        }
                    } finally {
                        RdmaDevice.quietly(() -> verbs.closeDevice(context));
                    }
                } catch (VerbsException e) {
                    states.add(e.getMessage());
                }
            }
            return "no active RDMA port: " + String.join("; ", states);
        } finally {
            verbs.freeDeviceList(list);
        }
    }

    /** "no RDMA devices: ibv_get_device_list returned NULL, errno 38 (Function not implemented)". */
    static String noDevices(VerbsLibrary verbs, VerbsLibrary.DeviceList failed) {
        return "no RDMA devices: ibv_get_device_list returned NULL, " + verbs.describeErrno(failed.errno());
    }

    private static int portState(VerbsLibrary verbs, MemorySegment context, String name, int port) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(Verbs.IBV_PORT_ATTR);
            verbs.queryPort(context, port, attr, name);
            return attr.get(JAVA_INT, Verbs.PORT_ATTR_STATE);
        }
    }
}
