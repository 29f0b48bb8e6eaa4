import java.io.IOException;
import java.io.OutputStream;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassFileVersion;
import java.lang.classfile.ClassHierarchyResolver;
import java.lang.classfile.ClassModel;
import java.lang.classfile.ClassTransform;
import java.lang.classfile.CodeTransform;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

/**
 * Re-emits the class files of a library older than Java 6 (major version below 50) as Java 8 class files: the same
 * code, with the stack map frames the type-checking verifier needs, written by the JDK's class-file API (JEP 484).
 * JDK 25's ahead-of-time cache holds no class older than that (JDK-8317269, fixed in JDK 26), and picocli, which every
 * tent4j command starts by, is compiled for Java 5: its 228 classes were loaded, verified and interpreted from the jar
 * on every start. Rewrites in place each jar of DIR that holds such classes (a signed one is left as it is: its
 * signature would no longer match); the other entries are copied unchanged,
 * and {@value #NOTE} says what was changed (the Apache License asks modified files to say so; NOTICE names this).
 *
 *   java scripts/OldClassFiles.java DIR
 */
public final class OldClassFiles {
    private static final int FIRST_VERIFIED_BY_TYPE = 50;
    private static final int TARGET = ClassFile.JAVA_8_VERSION;
    private static final String NOTE = "META-INF/TENT4J-REWRITTEN.txt";

    public static void main(String[] args) throws IOException {
        if (args.length != 1 || !Files.isDirectory(Path.of(args[0]))) {
            System.err.println("usage: java OldClassFiles.java DIR   (a directory of jars, e.g. a distribution's lib/)");
            System.exit(2);
        }
        List<Path> jars;
        try (var s = Files.list(Path.of(args[0]))) {
            jars = s.filter(p -> p.toString().endsWith(".jar")).sorted().toList();
        }
        for (Path jar : jars) {
            int n = upgrade(jar, jars);
            if (n > 0) {
                System.out.println("old-class-files: " + jar.getFileName() + ": " + n + " classes re-emitted as Java 8");
            }
        }
    }

    /** Rewrites {@code jar} when it holds old classes; returns how many it re-emitted. */
    private static int upgrade(Path jar, List<Path> classPath) throws IOException {
        List<ZipEntry> entries = new ArrayList<>();
        boolean any = false;
        boolean signed = false;
        try (ZipFile z = new ZipFile(jar.toFile())) {
            for (Enumeration<? extends ZipEntry> e = z.entries(); e.hasMoreElements(); ) {
                ZipEntry entry = e.nextElement();
                entries.add(entry);
                String name = entry.getName();
                signed |= name.startsWith("META-INF/") && (name.endsWith(".SF") || name.endsWith(".RSA")
                        || name.endsWith(".DSA") || name.endsWith(".EC"));
                if (!any && isClass(entry)) {
                    try (var in = z.getInputStream(entry)) {
                        any = major(in.readNBytes(8)) < FIRST_VERIFIED_BY_TYPE;
                    }
                }
            }
            if (!any) {
                return 0;
            }
            if (signed) {
                // its signature would no longer match the classes: such a jar keeps its classes out of the cache
                System.out.println("old-class-files: " + jar.getFileName() + " is signed; left as it is");
                return 0;
            }
            // stack maps name the common super type of two types, so the class hierarchy is read from every jar
            URL[] urls = new URL[classPath.size()];
            for (int i = 0; i < urls.length; i++) {
                urls[i] = classPath.get(i).toUri().toURL();
            }
            int upgraded = 0;
            Path tmp = jar.resolveSibling(jar.getFileName() + ".tmp");
            try (URLClassLoader loader = new URLClassLoader(urls, null);
                 OutputStream os = Files.newOutputStream(tmp);
                 ZipOutputStream out = new ZipOutputStream(os)) {
                ClassFile cf = ClassFile.of(ClassFile.StackMapsOption.GENERATE_STACK_MAPS,
                        ClassFile.ClassHierarchyResolverOption.of(ClassHierarchyResolver.defaultResolver()
                                .orElse(ClassHierarchyResolver.ofResourceParsing(loader))));
                for (ZipEntry entry : entries) {
                    byte[] bytes;
                    try (var in = z.getInputStream(entry)) {
                        bytes = in.readAllBytes();
                    }
                    if (isClass(entry) && major(bytes) < FIRST_VERIFIED_BY_TYPE) {
                        ClassModel model = cf.parse(bytes);
                        // rebuilding every method body is what makes the API compute its frames
                        bytes = cf.transformClass(model, ClassTransform.transformingMethodBodies(CodeTransform.ACCEPT_ALL)
                                .andThen((b, element) -> {
                                    if (element instanceof ClassFileVersion) {
                                        b.withVersion(TARGET, 0);
                                    } else {
                                        b.with(element);
                                    }
                                }));
                        upgraded++;
                    }
                    ZipEntry copy = new ZipEntry(entry.getName());
                    copy.setTime(entry.getTime());
                    out.putNextEntry(copy);
                    out.write(bytes);
                    out.closeEntry();
                }
                ZipEntry note = new ZipEntry(NOTE);
                // the jar's own time, so a rebuild writes the same bytes
                note.setTime(entries.getFirst().getTime());
                out.putNextEntry(note);
                out.write(("tent4j's build re-emitted the " + upgraded + " class files of this jar that were older than"
                        + " Java 6 as Java 8 class files (major version " + TARGET + "), with stack map frames and the"
                        + " same code, so that JDK 25's ahead-of-time cache can hold them (scripts/OldClassFiles.java"
                        + " in tent4j's sources). Every other entry is as its authors published it.\n")
                        .getBytes(java.nio.charset.StandardCharsets.UTF_8));
                out.closeEntry();
            } catch (IOException | RuntimeException e) {
                // closing the streams is inside this try too: a jar half written is never left beside the others
                Files.deleteIfExists(tmp);
                throw e;
            }
            Files.move(tmp, jar, StandardCopyOption.REPLACE_EXISTING);
            return upgraded;
        }
    }

    private static boolean isClass(ZipEntry e) {
        // a multi-release jar's versioned classes (module-info) are Java 9 or later already
        return e.getName().endsWith(".class") && !e.getName().startsWith("META-INF/");
    }

    private static int major(byte[] header) {
        return header.length < 8 ? Integer.MAX_VALUE : ((header[6] & 0xff) << 8) | (header[7] & 0xff);
    }
}
