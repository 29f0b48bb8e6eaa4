package org.tent4j.cli.doctor;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import java.util.stream.Collectors;

import org.tent4j.api.EngineFactory;
import org.tent4j.cli.BuildInfo;
import org.tent4j.cli.options.ConciseUsageErrors;
import org.tent4j.spi.Availability;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.PluginAdmission;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;
import org.tent4j.spi.platform.DevicePlatformProvider;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code tent4j doctor}: every plugin on the class path, whether it can run on this machine and, if not, precisely why.
 * It only discovers and probes providers (what {@code availability()} does); it opens no engine, socket or store.
 * Providers are listed in the order the engine loads them, and one the engine refuses (built for a newer SPI) is shown
 * REFUSED with the engine's own words ({@link PluginAdmission}) and not probed.
 * A provider that throws while being loaded or probed is reported, not fatal: the exit status is 0 whenever the report
 * was printed.
 */
@Command(name = "doctor", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Lists the transports, device platforms and metadata stores on the class path, whether each can "
                + "run here and why not, and their options.")
public final class Doctor implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = {"-v", "--verbose"}, description = "Also print the stack trace behind each unavailability cause.")
    boolean verbose;

    @Option(names = {"--no-options", "--no_options"}, description = "Leave out each plugin's options and their defaults.")
    boolean hideOptions;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        report(out);
        out.flush();
        return 0;
    }

    void report(PrintWriter out) {
        Runtime.Version v = Runtime.version();
        out.printf(Locale.ROOT, "tent4j doctor: Java %s (%s), %s %s %s, %d CPU(s), max heap %d MiB%n", v,
                System.getProperty("java.vendor", "?"), System.getProperty("os.name"), System.getProperty("os.version"),
                System.getProperty("os.arch"), Runtime.getRuntime().availableProcessors(),
                Runtime.getRuntime().maxMemory() >> 20);
        out.println("build: " + BuildInfo.current());

        Found<EngineFactory> runtimes = load(EngineFactory.class);
        out.println();
        if (runtimes.providers.isEmpty()) {
            out.println("runtime: NONE on the class path: TransferEngine.create fails (add org.tent4j:te-runtime)");
        } else {
            out.println("runtime: " + runtimes.providers.stream().map(Doctor::source).collect(Collectors.joining(", ")));
        }
        runtimes.printProblems(out);

        Found<TransportProvider> transports = load(TransportProvider.class)
                .ordered(p -> safely(p::order, TransportProvider.DEFAULT_ORDER), p -> safely(p::id, p.getClass().getName()));
        out.println();
        out.printf(Locale.ROOT, "transports (%d)%s%n", transports.providers.size(),
                transports.providers.isEmpty() ? ": none on the class path" : ":");
        for (TransportProvider p : transports.providers) {
            printTransport(out, p);
        }
        transports.printProblems(out);

        Found<DevicePlatformProvider> platforms = load(DevicePlatformProvider.class)
                .ordered(p -> safely(p::order, DevicePlatformProvider.DEFAULT_ORDER), p -> safely(p::id, p.getClass().getName()));
        out.println();
        out.printf(Locale.ROOT, "device platforms (%d)%s%n", platforms.providers.size(),
                platforms.providers.isEmpty() ? ": none on the class path" : ":");
        for (DevicePlatformProvider p : platforms.providers) {
            printPlatform(out, p);
        }
        platforms.printProblems(out);

        Found<MetadataStoreProvider> stores = load(MetadataStoreProvider.class)
                .ordered(p -> safely(p::order, MetadataStoreProvider.DEFAULT_ORDER), p -> String.join(",", safely(p::schemes, List.of())));
        out.println();
        out.printf(Locale.ROOT, "metadata stores (%d)%s%n", stores.providers.size(),
                stores.providers.isEmpty() ? ": none on the class path" : ":");
        for (MetadataStoreProvider p : stores.providers) {
            printStore(out, p);
        }
        stores.printProblems(out);
        out.println("  (p2p, the default metadata.uri, is built into the runtime: peers exchange descriptors directly)");
    }

    private void printTransport(PrintWriter out, TransportProvider p) {
        String id = safely(p::id, p.getClass().getName());
        String rank = safely(() -> Integer.toString(p.capabilities().rank()), "?");
        out.printf(Locale.ROOT, "  %-8s rank %-4s %s%n", id, rank, describedBeyond(id, safely(p::description, "")));
        if (refused(out, "transport", safely(p::spiVersion, -1), TransportProvider.SPI_VERSION)) {
            out.printf(Locale.ROOT, "           from %s%n", source(p));
            return;
        }
        printAvailability(out, safelyProbe(p::availability));
        TransportCapabilities caps = safely(p::capabilities, null);
        if (caps != null) {
            out.printf(Locale.ROOT, "           memory %s; %s; cancellation %s; max slice %s%n",
                    caps.memoryPaths().stream().map(Object::toString).sorted().collect(Collectors.joining(", ")),
                    caps.sameHostOnly() ? "same host only" : "cross host", caps.cancellation() ? "yes" : "no",
                    size(caps.maxSliceSize()));
        }
        printAdmitted(out, safely(p::spiVersion, -1), TransportProvider.SPI_VERSION, safely(p::order, TransportProvider.DEFAULT_ORDER),
                TransportProvider.DEFAULT_ORDER);
        if (!hideOptions) {
            printOptions(out, "transports." + id + ".", safely(p::options, List.of()));
        }
        out.printf(Locale.ROOT, "           from %s%n", source(p));
    }

    private void printPlatform(PrintWriter out, DevicePlatformProvider p) {
        String kind = safely(() -> p.memoryKind().prefix(), "?");
        String id = safely(p::id, p.getClass().getName());
        out.printf(Locale.ROOT, "  %-8s memory %-5s %s%n", id, kind, describedBeyond(id, safely(p::description, "")));
        if (!refused(out, "device platform", safely(p::spiVersion, -1), DevicePlatformProvider.SPI_VERSION)) {
            printAvailability(out, safelyProbe(p::availability));
            printAdmitted(out, safely(p::spiVersion, -1), DevicePlatformProvider.SPI_VERSION,
                    safely(p::order, DevicePlatformProvider.DEFAULT_ORDER), DevicePlatformProvider.DEFAULT_ORDER);
        }
        out.printf(Locale.ROOT, "           from %s%n", source(p));
    }

    private void printStore(PrintWriter out, MetadataStoreProvider p) {
        List<String> schemes = safely(p::schemes, List.of());
        out.printf(Locale.ROOT, "  %-8s %s%n", schemes.stream().map(s -> s + "://").collect(Collectors.joining(" ")),
                describedBeyond(String.join(",", schemes), safely(p::description, "")));
        if (refused(out, "metadata store", safely(p::spiVersion, -1), MetadataStoreProvider.SPI_VERSION)) {
            out.printf(Locale.ROOT, "           from %s%n", source(p));
            return;
        }
        printAvailability(out, safelyProbe(p::availability));
        printAdmitted(out, safely(p::spiVersion, -1), MetadataStoreProvider.SPI_VERSION,
                safely(p::order, MetadataStoreProvider.DEFAULT_ORDER), MetadataStoreProvider.DEFAULT_ORDER);
        if (!hideOptions) {
            String prefix = schemes.isEmpty() ? "metadata.?." : "metadata." + schemes.get(0) + ".";
            printOptions(out, prefix, safely(p::options, List.of()));
        }
        out.printf(Locale.ROOT, "           from %s%n", source(p));
    }

    private void printAvailability(PrintWriter out, Availability a) {
        if (a.isAvailable()) {
            out.println("           available");
            return;
        }
        out.println("           UNAVAILABLE: " + a.reason());
        Throwable cause = a.unavailabilityCause();
        if (cause instanceof ProbeFailure) {
            cause = cause.getCause();
        } else if (cause != null && !(cause instanceof Availability.UnavailableException)) {
            out.println("             (" + cause.getClass().getName() + ")");
        }
        if (cause != null) {
            for (Throwable c = cause.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
                out.println("             caused by " + c);
            }
        }
        if (verbose && cause != null) {
            cause.printStackTrace(out);
        }
    }

    /** The engine's verdict, by the rule its loader applies; a refused provider is never probed, here as there. */
    private static boolean refused(PrintWriter out, String spi, int theirs, int ours) {
        Optional<String> refusal = PluginAdmission.refusal(spi, theirs, ours);
        refusal.ifPresent(why -> out.println("           REFUSED: " + why + "; the engine does not load it"));
        return refusal.isPresent();
    }

    private static void printAdmitted(PrintWriter out, int theirs, int ours, int order, int defaultOrder) {
        if (theirs != ours) {
            out.printf(Locale.ROOT, "           SPI version %d (this te-api has %d): loaded, methods added since take their defaults%n",
                    theirs, ours);
        }
        if (order != defaultOrder) {
            out.printf(Locale.ROOT, "           order %d%n", order);
        }
    }

    private static void printOptions(PrintWriter out, String prefix, List<OptionSpec> options) {
        if (options.isEmpty()) {
            out.println("           options: none");
            return;
        }
        out.println("           options:");
        int width = options.stream().mapToInt(o -> prefix.length() + o.name().length()).max().orElse(0);
        for (OptionSpec o : options) {
            out.printf(Locale.ROOT, "             %-" + width + "s  %-8s default %-10s %s%n", prefix + o.name(),
                    o.type().name().toLowerCase(Locale.ROOT), o.defaultValue().isEmpty() ? "\"\"" : o.defaultValue(),
                    o.description() == null ? "" : o.description());
        }
    }

    static String size(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + " MiB";
        }
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + " KiB";
        }
        return bytes + " B";
    }

    private static String source(Object provider) {
        var cs = provider.getClass().getProtectionDomain().getCodeSource();
        String where = cs == null || cs.getLocation() == null ? "?" : cs.getLocation().getPath();
        int slash = where.lastIndexOf('/', where.endsWith("/") ? where.length() - 2 : where.length());
        return provider.getClass().getName() + " in " + (slash >= 0 ? where.substring(slash + 1) : where);
    }

    /** Provider calls may throw (a broken plugin must not hide the others). */
    private static <T> T safely(ThrowingSupplier<T> call, T fallback) {
        try {
            return call.get();
        } catch (Throwable t) {
            return fallback;
        }
    }

    private static Availability safelyProbe(ThrowingSupplier<Availability> probe) {
        try {
            Availability a = probe.get();
            return a == null ? Availability.unavailable("availability() returned null") : a;
        } catch (Throwable t) {
            return Availability.unavailable(new ProbeFailure(t));
        }
    }

    /** The provider's own probe threw instead of answering. */
    private static final class ProbeFailure extends Exception {
        ProbeFailure(Throwable thrown) {
            super("availability() threw " + thrown, thrown);
        }
    }

    /** The default description is the id itself; saying it twice tells nothing. */
    private static String describedBeyond(String id, String description) {
        return description == null || description.equals(id) ? "" : description;
    }

    @FunctionalInterface
    private interface ThrowingSupplier<T> {
        T get() throws Throwable;
    }

    /** The providers of one service type, and what went wrong loading others. */
    public record Found<T>(List<T> providers, List<String> problems) {
        /** In the order the engine loads them ({@link PluginAdmission#order}). */
        Found<T> ordered(ToIntFunction<T> order, Function<T, String> id) {
            List<T> sorted = new ArrayList<>(providers);
            sorted.sort(PluginAdmission.order(order, id));
            return new Found<>(List.copyOf(sorted), problems);
        }

        void printProblems(PrintWriter out) {
            for (String p : problems) {
                out.println("  could not load a provider: " + p);
            }
        }
    }

    public static <T> Found<T> load(Class<T> type) {
        Iterator<T> it = ServiceLoader.load(type).iterator();
        List<T> providers = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        // a provider whose class fails to load makes that step throw; ServiceLoader moves on to the next one
        for (int attempts = 0; attempts < 1000; attempts++) {
            try {
                if (!it.hasNext()) {
                    break;
                }
                providers.add(it.next());
            } catch (ServiceConfigurationError | LinkageError e) {
                problems.add(type.getSimpleName() + ": " + e.getMessage()
                        + (e.getCause() == null ? "" : " (" + e.getCause() + ")"));
            }
        }
        return new Found<>(providers, problems);
    }
}
