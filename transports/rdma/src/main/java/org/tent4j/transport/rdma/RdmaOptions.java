package org.tent4j.transport.rdma;

import java.util.Arrays;
import java.util.List;

import org.tent4j.api.ConfigException;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionSpec.Type;
import org.tent4j.spi.OptionValues;

/**
 * Options under {@code transports.rdma.}; defaults are Mooncake's (reference §3.2, §4.3).
 *
 * @param devices      allow-list of device names; empty means every device
 * @param port         HCA port ({@code MC_IB_PORT})
 * @param gidIndex     GID table index, -1 to choose ({@link GidSelection})
 * @param maxQpWr      send-queue depth per QP
 * @param maxSge       scatter/gather entries per work request the QPs are created with
 * @param pathMtu      largest path MTU in bytes ({@code MC_MTU})
 * @param qpsPerPeer   RC QPs per (local device, peer) ({@code MC_NUM_QP_PER_EP})
 * @param cqSize       completion-queue entries per device, and so the most work requests in flight per device
 *                     ({@code MC_MAX_CQE_PER_CTX})
 * @param timeout      local ACK timeout code
 * @param retryCount   transport retry count
 * @param rnrRetry     RNR retry count (7 = infinite)
 * @param serviceLevel IB service level ({@code MC_IB_SL})
 * @param trafficClass GRH traffic class ({@code MC_IB_TC})
 * @param gpuDirect    register device memory with ibv_reg_mr through peer memory (nvidia-peermem, amdgpu)
 */
record RdmaOptions(List<String> devices, int port, int gidIndex, int maxQpWr, int maxSge, int pathMtu,
                   int qpsPerPeer, int cqSize, int timeout, int retryCount, int rnrRetry, int serviceLevel,
                   int trafficClass, boolean gpuDirect) {
    static final String PREFIX = "transports.rdma.";

    static final List<OptionSpec> SPECS = List.of(
            OptionSpec.of("devices", Type.STRING, "", "comma-separated RDMA devices to use (e.g. mlx5_0,mlx5_1); "
                    + "empty uses every device with an active port"),
            OptionSpec.of("port", Type.INT, 1, "HCA port number on every device"),
            OptionSpec.of("gid_index", Type.INT, -1, "GID table index; -1 picks RoCE v2 IPv4-mapped, then RoCE v2, "
                    + "then the first GID (index 0 on InfiniBand)"),
            OptionSpec.of("max_qp_wr", Type.INT, 256, "send-queue depth of each queue pair"),
            OptionSpec.of("max_sge", Type.INT, 4, "scatter/gather entries per work request"),
            OptionSpec.of("path_mtu", Type.INT, 4096, "largest path MTU in bytes (256..4096), bounded by the port"),
            OptionSpec.of("qps_per_peer", Type.INT, 2, "RC queue pairs per local device and peer"),
            OptionSpec.of("cq_size", Type.INT, 4096, "completion-queue entries per device (bounds work in flight)"),
            OptionSpec.of("timeout", Type.INT, 14, "local ACK timeout code: 4.096 us * 2^timeout (0..31)"),
            OptionSpec.of("retry_cnt", Type.INT, 7, "transport retries before a work request fails (0..7)"),
            OptionSpec.of("rnr_retry", Type.INT, 7, "receiver-not-ready retries (0..7, 7 = infinite)"),
            OptionSpec.of("service_level", Type.INT, 0, "InfiniBand service level (0..15)"),
            OptionSpec.of("traffic_class", Type.INT, 0, "GRH traffic class (0..255)"),
            OptionSpec.of("gpu_direct", Type.BOOLEAN, true, "register device memory (cuda:N, rocm:N) directly on the NICs "
                    + "through the kernel's peer-memory support (nvidia-peermem, amdgpu); false serves host memory only"));

    static RdmaOptions from(OptionValues v) {
        List<String> devices = Arrays.stream(v.getString("devices").split(",")).map(String::strip)
                .filter(s -> !s.isEmpty()).toList();
        RdmaOptions o = new RdmaOptions(devices,
                range(v, "port", 1, 255),
                range(v, "gid_index", -1, 255),
                range(v, "max_qp_wr", 1, 1 << 20),
                range(v, "max_sge", 1, 64),
                v.getInt("path_mtu"),
                range(v, "qps_per_peer", 1, 64),
                range(v, "cq_size", 16, 1 << 22),
                range(v, "timeout", 0, 31),
                range(v, "retry_cnt", 0, 7),
                range(v, "rnr_retry", 0, 7),
                range(v, "service_level", 0, 15),
                range(v, "traffic_class", 0, 255),
                v.getBoolean("gpu_direct"));
        try {
            VerbsValues.mtuEnum(o.pathMtu());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(PREFIX + "path_mtu", e.getMessage());
        }
        return o;
    }

    /** {@code ibv_mtu} of {@link #pathMtu()}. */
    int pathMtuEnum() {
        return VerbsValues.mtuEnum(pathMtu);
    }

    boolean allows(String device) {
        return devices.isEmpty() || devices.contains(device);
    }

    private static int range(OptionValues v, String name, int min, int max) {
        int x = v.getInt(name);
        if (x < min || x > max) {
            throw new ConfigException(PREFIX + name, "must be in " + min + ".." + max + ", got " + x);
        }
        return x;
    }
}
