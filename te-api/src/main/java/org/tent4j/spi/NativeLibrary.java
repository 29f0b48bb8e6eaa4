package org.tent4j.spi;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;


/**
 * A shared library opened from the first candidate that loads, and its functions bound as downcall handles.
 *
 * <p>Here in te-api because every native plugin (device platforms, transports) needs it and plugins may depend on
 * te-api only. Libraries are opened in the global arena: device runtimes keep process-wide state (contexts, IPC mappings) and
 * must never be unloaded while the JVM runs.
 */
public final class NativeLibrary {
    private static final Linker LINKER = Linker.nativeLinker();

    private final String openedFrom;
    private final SymbolLookup symbols;

    private NativeLibrary(String openedFrom, SymbolLookup symbols) {
        this.openedFrom = openedFrom;
        this.symbols = symbols;
    }

    /**
     * Opens the first candidate that loads. A bare file name goes through the dynamic linker's search
     * ({@code LD_LIBRARY_PATH}, ldconfig); a name with a slash is a file path.
     *
     * @param what       how the library is named in the cause, e.g. {@code libcudart.so.13/.12/.11}
     * @param candidates names and paths, tried in order
     * @return the library; it stays loaded for the JVM's life
     * @throws Availability.UnavailableException "{@code <what>} not found (searched: ...)" when none loads
     */
    public static NativeLibrary open(String what, List<String> candidates) throws Availability.UnavailableException {
        List<String> searched = new ArrayList<>();
        for (String candidate : new LinkedHashSet<>(candidates)) {
            if (candidate == null || candidate.isBlank()) {
                continue;
            }
            searched.add(candidate);
            try {
                SymbolLookup lookup = candidate.indexOf('/') >= 0
                        // libraryLookup(Path) reads a relative path as a file, never through the linker's search
                        ? SymbolLookup.libraryLookup(Path.of(candidate).toAbsolutePath(), Arena.global())
                        : SymbolLookup.libraryLookup(candidate, Arena.global());
                return new NativeLibrary(candidate, lookup);
            } catch (IllegalArgumentException notLoadable) {
                // next candidate; the cause lists every one that was tried
            }
        }
        throw new Availability.UnavailableException(what + " not found (searched: " + String.join(", ", searched) + ")");
    }

    /**
     * The candidate that loaded.
     *
     * @return a name or path from the candidates
     */
    public String openedFrom() {
        return openedFrom;
    }

    /**
     * Whether the library exports a symbol.
     *
     * @param symbol the C name
     * @return {@code true} if found
     */
    public boolean has(String symbol) {
        return symbols.find(symbol).isPresent();
    }

    /**
     * Binds a function the platform cannot work without.
     *
     * @param symbol     the C name
     * @param descriptor its C signature
     * @return a downcall handle
     * @throws Availability.UnavailableException naming the library and the symbol when it is missing
     */
    public MethodHandle bind(String symbol, FunctionDescriptor descriptor) throws Availability.UnavailableException {
        return bindOptional(symbol, descriptor).orElseThrow(() -> new Availability.UnavailableException(
                openedFrom + " has no symbol " + symbol + " (runtime too old?)"));
    }

    /**
     * Binds a function the plugin can work without (a newer runtime's addition).
     *
     * @param symbol     the C name
     * @param descriptor its C signature
     * @return a downcall handle, or empty when the library lacks the symbol
     */
    public Optional<MethodHandle> bindOptional(String symbol, FunctionDescriptor descriptor) {
        Optional<MemorySegment> address = symbols.find(symbol);
        return address.map(a -> LINKER.downcallHandle(a, descriptor));
    }

    /**
     * Reads a NUL-terminated string a library returned (static storage owned by the library).
     *
     * @param cString the pointer, possibly NULL
     * @return the string, "" for NULL
     */
    public static String string(MemorySegment cString) {
        if (cString == null || cString.equals(MemorySegment.NULL)) {
            return "";
        }
        return cString.reinterpret(Long.MAX_VALUE).getString(0);
    }

    /**
     * The candidates for {@code names} by name, then under each directory in {@code directories}.
     *
     * @param names       file names, e.g. {@code libcudart.so.12}
     * @param directories directories to try them under; blank ones are skipped
     * @return the candidates, in order
     */
    public static List<String> candidates(List<String> names, List<String> directories) {
        List<String> out = new ArrayList<>(names);
        for (String dir : directories) {
            if (dir == null || dir.isBlank()) {
                continue;
            }
            for (String name : names) {
                out.add(Path.of(dir).resolve(name).toString());
            }
        }
        return out;
    }

    /**
     * Comma-separated names or paths from a system property, tried before the defaults.
     *
     * @param property the property's name
     * @return its parts, stripped; empty when unset
     */

    public static List<String> fromProperty(String property) {
        String value = System.getProperty(property);
        if (value == null || value.isBlank()) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        for (String part : value.split(",")) {
            if (!part.isBlank()) {
                out.add(part.strip());
            }
        }
        return out;
    }
}
