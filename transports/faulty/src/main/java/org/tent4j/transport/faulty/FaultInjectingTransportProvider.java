package org.tent4j.transport.faulty;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.tent4j.api.ConfigException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionSpec.Type;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * Transport {@value #ID}: wraps another transport (option {@code wraps}) and injects failures, delays, slow or dead
 * paths, corrupted statuses and dropped connections into its slices, so the runtime's retries, failover and path
 * health can be tested against a real data path. Its own artifact (transport-faulty, which te-testkit brings to
 * tests), never on the class path of anything that ships.
 *
 * <p>Opt-in by name: with {@code wraps} empty (the default) it reports itself unavailable, so an engine that merely
 * has it on the class path neither runs it nor lists it among its transports.
 *
 * <p>The wrapped transport's options come from {@code transports.faulty.delegate.<name>} (one key per option, for
 * every option name some transport on the class path declares) or from {@code wrapped_options}
 * ({@code name=value,...}), checked against what the wrapped transport declares; the rest keep their defaults. Its
 * {@code transports.<id>.*} settings in the engine's config belong to the unwrapped instance, if that runs too.
 *
 * <p>Rank {@value #RANK}: after every real transport, so it carries traffic only when preferred or required
 * ({@code transports.preference=faulty}, or {@code TransportMode.REQUIRE}).
 */
public final class FaultInjectingTransportProvider implements TransportProvider {
    public static final String ID = "faulty";
    public static final int RANK = 1000;

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of("wraps", Type.STRING, "", "id of the transport to wrap (found through ServiceLoader); empty = inert"),
            OptionSpec.of("fail_percent", Type.INT, 0, "percent of slices failed with PEER_FAILED instead of posted"),
            OptionSpec.of("delay", Type.DURATION, "0ms", "added before every slice is handed to the wrapped transport"),
            OptionSpec.of("fail_after", Type.LONG, -1, "every slice after this many posted fails; -1 = never"),
            OptionSpec.of("corrupt_status", Type.BOOLEAN, false,
                    "report the wrapped transport's successes as PEER_FAILED (the bytes did land)"),
            OptionSpec.of("drop_peer_after", Type.LONG, -1,
                    "after this many slices close the wrapped connection (in-flight slices fail, isOpen() turns false); -1 = never"),
            OptionSpec.of("wrapped_options", Type.STRING, "",
                    "options of the wrapped transport, comma separated name=value (e.g. lanes=1,io_threads=1)"),
            OptionSpec.of("paths", Type.INT, 0, "paths shown to the runtime, mapped round-robin onto the wrapped "
                    + "transport's; 0 = exactly the wrapped transport's"),
            OptionSpec.of("slow_path", Type.INT, -1, "path that carries at most slow_rate bytes per second; -1 = none"),
            OptionSpec.of("slow_rate", Type.SIZE, "0", "bytes per second slow_path carries, its slices served one "
                    + "after another like a slower link (e.g. 200m)"),
            OptionSpec.of("fail_path", Type.INT, -1, "path that dies after fail_path_after slices on it; -1 = none"),
            OptionSpec.of("fail_path_after", Type.LONG, 0, "slices fail_path carries before it dies"),
            OptionSpec.of("seed", Type.LONG, 0, "seed of the fail_percent draws; 0 = a different one every run"));

    /** What the runtime sorts by; the live transport reports its delegate's (see {@link Transport#capabilities()}). */
    private static final TransportCapabilities INERT = TransportCapabilities.builder().rank(RANK).build();

    @Override
    public String id() {
        return ID;
    }

    @Override
    public String description() {
        return "fault injector for tests: wraps the transport named by transports.faulty.wraps";
    }

    /** Prefix of the options passed through to the wrapped transport. */
    static final String DELEGATE = "delegate.";

    /** Computed on first use: discovery of the other transports is cheap but not free. */
    private volatile List<OptionSpec> options;

    private static final Availability INERT_UNAVAILABLE = Availability.unavailable(
            "inert: transports.faulty.wraps names no transport to wrap (faulty runs only when a test asks for it)");

    /** Unavailable: without options it wraps nothing. See {@link #availability(OptionValues)}. */
    @Override
    public Availability availability() {
        return INERT_UNAVAILABLE;
    }

    /**
     * Unavailable while inert or when {@code wraps} names no transport here; otherwise exactly as available as the
     * wrapped transport with its options. Options the wrapped transport rejects leave it available: {@link #create}
     * then fails the engine's start naming the key, where an unavailable transport would only be skipped.
     */
    @Override
    public Availability availability(OptionValues options) {
        String wraps = options.getString("wraps");
        if (wraps.isEmpty()) {
            return INERT_UNAVAILABLE;
        }
        TransportProvider delegate;
        try {
            delegate = delegate(wraps);
        } catch (ConfigException e) {
            return Availability.unavailable(e.getMessage());
        }
        OptionValues delegateOptions;
        try {
            delegateOptions = delegateOptions(delegate, options);
        } catch (ConfigException e) {
            return Availability.available();
        }
        Availability a = delegate.availability(delegateOptions);
        return a.isAvailable() ? a : Availability.unavailable(new IllegalStateException(
                "faulty wraps '" + wraps + "', which is unavailable: " + a.reason(), a.unavailabilityCause()));
    }

    @Override
    public TransportCapabilities capabilities() {
        return INERT;
    }

    /** {@link #OPTIONS} plus one {@code delegate.<name>} per option name of the transports on the class path. */
    @Override
    public List<OptionSpec> options() {
        List<OptionSpec> o = options;
        if (o == null) {
            Map<String, OptionSpec> delegated = new TreeMap<>();
            for (TransportProvider p : ServiceLoader.load(TransportProvider.class)) {
                if (!p.id().equals(ID)) {
                    for (OptionSpec spec : p.options()) {
                        // text, parsed against the wrapped transport's own spec once wraps has chosen it
                        delegated.putIfAbsent(spec.name(), OptionSpec.of(DELEGATE + spec.name(), Type.STRING, "",
                                "the wrapped transport's option " + spec.name() + "; empty = its default"));
                    }
                }
            }
            List<OptionSpec> all = new ArrayList<>(OPTIONS);
            all.addAll(delegated.values());
            o = List.copyOf(all);
            options = o;
        }
        return o;
    }

    @Override
    public Transport create(TransportContext context) {
        FaultPlan plan = FaultPlan.from(context.options());
        if (plan.wraps().isEmpty()) {
            throw new ConfigException("transports.faulty.wraps", "names no transport to wrap; faulty cannot run inert");
        }
        TransportProvider provider = delegate(plan.wraps());
        OptionValues delegateOptions = delegateOptions(provider, context.options());
        provider.availability(delegateOptions).ensureAvailable("transport '" + plan.wraps() + "' wrapped by faulty");
        Transport delegate = provider.create(new DelegateContext(context, delegateOptions, plan.wraps()));
        return new FaultInjectingTransport(context, plan, provider, delegate);
    }

    /** The wrapped transport's options from {@code wrapped_options} and {@code delegate.*}; naming one twice is an error. */
    OptionValues delegateOptions(TransportProvider delegate, OptionValues faultyOptions) {
        Map<String, String> values = parseWrappedOptions(faultyOptions.getString("wrapped_options"));
        Set<String> declared = new HashSet<>();
        delegate.options().forEach(spec -> declared.add(spec.name()));
        for (OptionSpec spec : options()) {
            if (!spec.name().startsWith(DELEGATE)) {
                continue;
            }
            String value = faultyOptions.getString(spec.name());
            String name = spec.name().substring(DELEGATE.length());
            if (value.isEmpty()) {
                continue;
            }
            if (!declared.contains(name)) {
                throw new ConfigException("transports.faulty." + spec.name(), "the wrapped transport '" + delegate.id()
                        + "' has no option '" + name + "'; it has " + new TreeSet<>(declared));
            }
            if (values.put(name, value) != null) {
                throw new ConfigException("transports.faulty." + spec.name(), "option '" + name
                        + "' is also set in transports.faulty.wrapped_options; set it once");
            }
        }
        return OptionValues.parse("transports." + delegate.id() + ".", delegate.options(), values);
    }

    private static Map<String, String> parseWrappedOptions(String wrappedOptions) {
        Map<String, String> values = new LinkedHashMap<>();
        for (String item : wrappedOptions.split(",")) {
            if (item.isBlank()) {
                continue;
            }
            int eq = item.indexOf('=');
            if (eq <= 0) {
                throw new ConfigException("transports.faulty.wrapped_options", "expected name=value, got '"
                        + item.strip() + "'");
            }
            values.put(item.substring(0, eq).strip(), item.substring(eq + 1).strip());
        }
        return values;
    }

    static TransportProvider delegate(String id) {
        if (id.equals(ID)) {
            throw new ConfigException("transports.faulty.wraps", "faulty cannot wrap itself");
        }
        List<String> found = new ArrayList<>();
        for (TransportProvider p : ServiceLoader.load(TransportProvider.class)) {
            if (p.id().equals(id)) {
                return p;
            }
            found.add(p.id());
        }
        throw new ConfigException("transports.faulty.wraps", "no transport '" + id + "' on the class path (found: "
                + found + ")");
    }
}
