package org.tent4j.runtime.plugins;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransportInfo;
import org.tent4j.runtime.config.ResolvedConfig;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * The transports this engine runs. Providers are found once ({@link #discover}, through {@link PluginLoader}: one built
 * against a newer SPI than this runtime's is refused with one log line). They are ordered by their constant {@link TransportProvider#order()},
 * without probing; only the enabled ones are probed ({@code availability}) and only the available ones are asked
 * for capabilities, whose rank breaks ties of order. A slot's index is its bit in buffer masks.
 */
public final class TransportRegistry implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TransportRegistry.class);

    private final List<TransportProvider> providers;
    private final TransportSlot[] slots;
    private final List<String> ids;
    /** Started and unavailable transports; {@code null} where one was not enabled (see {@link #disabled}). */
    private final List<TransportInfo> startInfos;
    private final Map<Integer, Map.Entry<TransportProvider, OptionValues>> disabled;
    private volatile List<TransportInfo> infos;
    private final int[] preference;
    private final boolean explicitPreference;

    /**
     * Starts probing {@code p} on a thread of its own, so the enabled providers are probed at once: a probe mostly waits
     * on native libraries (loading libibverbs, libfabric or the CUDA runtime and asking for devices), which took about
     * half a second each for rdma, efa and nvlink on a 2-core machine without the hardware, one after the other the
     * largest part of an engine's start.
     */
    private static CompletableFuture<Availability> probe(TransportProvider p, OptionValues options) {
        CompletableFuture<Availability> f = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("tent4j-probe-" + p.id()).start(() -> {
            try {
                f.complete(p.availability(options));
            } catch (RuntimeException | Error e) {
                f.completeExceptionally(e);
            }
        });
        return f;
    }

    /** A probe's answer; what it threw is thrown here, as if it had run on this thread. */
    private static Availability probed(CompletableFuture<Availability> probe) {
        try {
            return probe.join();
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw e;
        }
    }

    /** The compatible providers on the class path, in {@code order()} then id order. */
    public static List<TransportProvider> discover() {
        return PluginLoader.load(PluginLoader.TRANSPORTS);
    }

    /** The option prefixes of every provider, for config validation. */
    public static Map<String, List<OptionSpec>> options(List<TransportProvider> providers) {
        Map<String, List<OptionSpec>> out = new LinkedHashMap<>();
        for (TransportProvider p : providers) {
            out.put("transports." + p.id() + ".", p.options());
        }
        return out;
    }

    /**
     * Starts every enabled, available transport.
     *
     * @param contexts the context a transport is created with, given its options and id
     */
    public TransportRegistry(List<TransportProvider> providers, ResolvedConfig config,
                      BiFunction<String, OptionValues, TransportContext> contexts) {
        this.providers = providers;
        OptionValues core = config.core();
        Set<String> enabled = parseList(core.getString(EngineConfig.TRANSPORTS_ENABLED));
        for (String id : enabled) {
            if (!id.equals("*") && providers.stream().noneMatch(p -> p.id().equals(id))) {
                throw new ConfigException(EngineConfig.TRANSPORTS_ENABLED, "no transport '" + id + "' on the class path (found: "
                        + providers.stream().map(TransportProvider::id).toList() + ")");
            }
        }
        record Started(TransportProvider provider, TransportCapabilities capabilities, Transport transport) {
        }
        List<Started> started = new ArrayList<>();
        List<TransportInfo> info = new ArrayList<>();
        Map<Integer, Map.Entry<TransportProvider, OptionValues>> disabled = new LinkedHashMap<>();
        record Candidate(TransportProvider provider, OptionValues options, CompletableFuture<Availability> probe) {
        }
        List<Candidate> candidates = new ArrayList<>();
        for (TransportProvider p : providers) {
            OptionValues options = config.plugin("transports." + p.id() + ".", p.options());
            // a disabled plugin is probed only if someone asks (transports()): it loads no native library at start
            boolean wanted = enabled.contains("*") || enabled.contains(p.id());
            candidates.add(new Candidate(p, options, wanted ? probe(p, options) : null));
        }
        try {
            for (Candidate c : candidates) {
                TransportProvider p = c.provider();
                OptionValues options = c.options();
                if (c.probe() == null) {
                    info.add(null);
                    disabled.put(info.size() - 1, Map.entry(p, options));
                    continue;
                }
                Availability availability = probed(c.probe());
                if (!availability.isAvailable()) {
                    info.add(new TransportInfo(p.id(), false, availability.reason(), false));
                    log.info("transport '{}' skipped: unavailable: {}", p.id(), availability.reason());
                    continue;
                }
                if (started.size() == 64) {
                    throw new ConfigException(EngineConfig.TRANSPORTS_ENABLED, "at most 64 transports can run in one engine");
                }
                try {
                    Transport t = p.create(contexts.apply(p.id(), options));
                    started.add(new Started(p, t.capabilities().orElseGet(p::capabilities), t));
                    info.add(new TransportInfo(p.id(), true, null, true));
                } catch (ConfigException e) {
                    throw e;
                } catch (RuntimeException e) {
                    log.warn("transport '{}' skipped: it failed to start: {}", p.id(), e.getMessage());
                    info.add(new TransportInfo(p.id(), false, "failed to start: " + e.getMessage(), false));
                }
            }
        } catch (RuntimeException e) {
            for (Started s : started) {
                closeQuietly(s.transport(), e);
            }
            throw e;
        }
        started.sort(Comparator.comparingInt((Started s) -> s.provider().order()).thenComparingInt(s -> s.capabilities().rank())
                .thenComparing(s -> s.provider().id()));
        this.slots = new TransportSlot[started.size()];
        for (int i = 0; i < slots.length; i++) {
            Started s = started.get(i);
            slots[i] = new TransportSlot(i, s.provider().id(), s.provider(), s.capabilities(), s.transport());
        }
        this.ids = java.util.Arrays.stream(slots).map(TransportSlot::id).toList();
        this.startInfos = info;
        this.disabled = disabled;
        List<String> pref = new ArrayList<>(parseList(core.getString(EngineConfig.TRANSPORTS_PREFERENCE)));
        pref.remove("*");
        for (String id : pref) {
            if (providers.stream().noneMatch(p -> p.id().equals(id))) {
                close();
                throw new ConfigException(EngineConfig.TRANSPORTS_PREFERENCE, "no transport '" + id + "' on the class path");
            }
        }
        this.explicitPreference = !pref.isEmpty();
        List<Integer> order = new ArrayList<>();
        for (String id : pref) {
            int i = indexOf(id);
            if (i >= 0) {
                order.add(i);
            }
        }
        for (TransportSlot s : slots) {
            if (!order.contains(s.index())) {
                order.add(s.index());
            }
        }
        this.preference = order.stream().mapToInt(Integer::intValue).toArray();
    }

    private static void closeQuietly(Transport t, RuntimeException cause) {
        try {
            t.close();
        } catch (RuntimeException suppressed) {
            cause.addSuppressed(suppressed);
        }
    }

    public static Set<String> parseList(String s) {
        Set<String> out = new LinkedHashSet<>();
        for (String p : s.split(",")) {
            if (!p.isBlank()) {
                out.add(p.strip());
            }
        }
        return out;
    }

    /** Every provider found on the class path, running or not (for policy validation). */
    List<TransportProvider> providers() {
        return providers;
    }

    public TransportSlot[] slots() {
        return slots;
    }

    public TransportSlot slot(int index) {
        return slots[index];
    }

    public int size() {
        return slots.length;
    }

    /** Ids of the running transports, in slot order (published in every descriptor). */
    public List<String> ids() {
        return ids;
    }

    /** Every provider: whether it can run here and whether this engine runs it. Probes the disabled ones once. */
    public List<TransportInfo> infos() {
        List<TransportInfo> i = infos;
        if (i == null) {
            synchronized (this) {
                if (infos == null) {
                    List<TransportInfo> out = new ArrayList<>(startInfos);
                    disabled.forEach((at, p) -> {
                        Availability a = p.getKey().availability(p.getValue());
                        out.set(at, new TransportInfo(p.getKey().id(), a.isAvailable(), a.isAvailable() ? null : a.reason(), false));
                    });
                    infos = List.copyOf(out);
                }
                i = infos;
            }
        }
        return i;
    }

    /** Slot indexes in the default order: {@code transports.preference}, then the rest in slot order. */
    public int[] preference() {
        return preference;
    }

    /** Whether {@code transports.preference} names any transport (then falling back from its head is a fallback). */
    public boolean explicitPreference() {
        return explicitPreference;
    }

    /**
     * A segment the engine's directory does not know, offered to the transports in preference order
     * ({@link Transport#resolveSegment}); the first that answers wins, and a transport's refusal (a name of its own
     * whose metadata is wrong) is thrown once no transport answered.
     */
    public Optional<SegmentDescriptor> resolveSegment(String segmentName) {
        TransferException refused = null;
        for (int i : preference) {
            TransportSlot s = slots[i];
            try {
                Optional<SegmentDescriptor> d = s.transport().resolveSegment(segmentName);
                if (d.isPresent()) {
                    log.info("segment '{}' resolved by transport '{}'", segmentName, s.id());
                    return d;
                }
            } catch (TransferException e) {
                if (refused == null) {
                    refused = e;
                } else {
                    refused.addSuppressed(e);
                }
            }
        }
        if (refused != null) {
            throw refused;
        }
        return Optional.empty();
    }

    public int indexOf(String transportId) {
        for (TransportSlot s : slots) {
            if (s.id().equals(transportId)) {
                return s.index();
            }
        }
        return -1;
    }

    @Override
    public void close() {
        closeAll();
    }

    /** Closes every transport; returns the slots (bit = index) that failed to, whose memory may still be touched. */
    public long closeAll() {
        long failed = 0;
        for (TransportSlot s : slots) {
            try {
                s.transport().close();
            } catch (RuntimeException e) {
                failed |= 1L << s.index();
                log.error("transport '{}' failed to close; memory registered with it stays allocated: {}", s.id(), e.getMessage());
            }
        }
        return failed;
    }
}
