// The Unity API surface check run by scripts/test_csharp.sh (never part of the package: Tools~ is
// not imported by Unity). It reads compiled assemblies with Mono.Cecil, one line per
// UnityEngine/UnityEditor member:
//   declared STUB.dll...                       every public member the stub declares
//   used STUB.dll... -- PKG.dll...             every stub member the package's assemblies reference
//   check LIST STUB.dll... -- PKG.dll...       compares both with LIST (Tests/UnityStub~/api-surface.txt,
//                                              the members with their signatures as Unity 2021.3 declares them)
// check fails when the stub declares a member the list lacks or the other way round, when the package
// uses a member outside the list, or when the list names a member nothing uses (enum values and
// constants excepted: the compiler inlines them, so no reference is left to find).
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;
using Mono.Cecil;
using Mono.Cecil.Cil;

static class ApiSurface
{
    static int Main(string[] args)
    {
        if (args.Length >= 2 && args[0] == "declared")
        {
            foreach (var line in Declared(args.Skip(1))) Console.WriteLine(line);
            return 0;
        }
        if (args.Length >= 4 && args[0] == "used")
        {
            foreach (var line in Used(args.Skip(1).ToArray())) Console.WriteLine(line);
            return 0;
        }
        if (args.Length >= 5 && args[0] == "check") return Check(args[1], args.Skip(2).ToArray());
        Console.Error.WriteLine("usage: ApiSurface declared STUB.dll... | used STUB.dll... -- PKG.dll... | check LIST STUB.dll... -- PKG.dll...");
        return 2;
    }

    static SortedSet<string> Declared(IEnumerable<string> stubs)
    {
        var lines = new SortedSet<string>(StringComparer.Ordinal);
        foreach (var path in stubs)
            foreach (var type in ModuleDefinition.ReadModule(path).Types)
                Declare(type, lines);
        return lines;
    }

    static SortedSet<string> Used(string[] args)
    {
        var stubs = args.TakeWhile(a => a != "--").ToArray();
        var packages = args.Skip(stubs.Length + 1).ToArray();
        var resolver = new DefaultAssemblyResolver();
        foreach (var dir in stubs.Concat(packages).Select(Path.GetDirectoryName).Distinct()) resolver.AddSearchDirectory(dir);
        var stubNames = new HashSet<string>(stubs.Select(Path.GetFileNameWithoutExtension));
        var lines = new SortedSet<string>(StringComparer.Ordinal);
        foreach (var path in packages)
        {
            var module = ModuleDefinition.ReadModule(path, new ReaderParameters { AssemblyResolver = resolver });
            new UseCollector(stubNames, lines).Collect(module);
        }
        return lines;
    }

    static int Check(string listPath, string[] args)
    {
        // A list line is a signature, optionally followed by "  # where Unity declares it".
        var listed = new SortedSet<string>(StringComparer.Ordinal);
        foreach (var raw in File.ReadAllLines(listPath))
        {
            int hash = raw.IndexOf("  #", StringComparison.Ordinal);
            string line = (hash >= 0 ? raw.Substring(0, hash) : raw).Trim();
            if (line.Length > 0 && !line.StartsWith("#", StringComparison.Ordinal)) listed.Add(line);
        }
        var declared = Declared(args.TakeWhile(a => a != "--"));
        var used = Used(args);
        int problems = 0;
        Action<string, IEnumerable<string>> report = (what, lines) =>
        {
            foreach (var line in lines)
            {
                Console.Error.WriteLine(what + ": " + line);
                problems++;
            }
        };
        report("listed but the stub does not declare it (or not with this signature)", listed.Where(l => !declared.Contains(l)));
        // A class without a declared constructor gets a parameterless one from the compiler, in the stub as in Unity.
        report("the stub declares it but the list does not", declared.Where(l => !listed.Contains(l) && !(l.StartsWith("ctor ", StringComparison.Ordinal) && l.EndsWith("()", StringComparison.Ordinal))));
        report("the package uses it but the list does not", used.Where(l => !listed.Contains(l)));
        report("listed but nothing in the package uses it", listed.Where(l => !used.Contains(l) && !l.StartsWith("enum ", StringComparison.Ordinal) && !l.StartsWith("field const ", StringComparison.Ordinal)));
        Console.WriteLine(listed.Count + " listed members, " + used.Count + " used, " + problems + " problems");
        return problems == 0 ? 0 : 1;
    }

    static void Declare(TypeDefinition type, SortedSet<string> lines)
    {
        if (!(type.IsPublic || type.IsNestedPublic)) return;
        lines.Add(TypeLine(type));
        foreach (var nested in type.NestedTypes) Declare(nested, lines);
        if (type.IsEnum)
        {
            foreach (var f in type.Fields.Where(f => f.IsStatic && f.IsPublic)) lines.Add(FieldLine(f));
            return;
        }
        if (IsDelegate(type)) return; // its signature is in the type line
        foreach (var f in type.Fields.Where(f => f.IsPublic)) lines.Add(FieldLine(f));
        foreach (var p in type.Properties.Where(p => Visible(p.GetMethod) || Visible(p.SetMethod))) lines.Add(PropertyLine(p));
        foreach (var e in type.Events.Where(e => Visible(e.AddMethod))) lines.Add(EventLine(e));
        foreach (var m in type.Methods.Where(m => Visible(m) && !m.IsGetter && !m.IsSetter && !m.IsAddOn && !m.IsRemoveOn))
        {
            if (m.IsConstructor && m.IsStatic) continue;
            lines.Add(MethodLine(m));
        }
    }

    static bool Visible(MethodDefinition m) => m != null && (m.IsPublic || m.IsFamily || m.IsFamilyOrAssembly);

    static bool IsDelegate(TypeDefinition t) => t.BaseType != null && t.BaseType.FullName == "System.MulticastDelegate";

    public static string TypeLine(TypeDefinition t)
    {
        if (IsDelegate(t))
        {
            var invoke = t.Methods.First(m => m.Name == "Invoke");
            return "delegate " + Name(t) + "(" + Parameters(invoke) + ") : " + Name(invoke.ReturnType);
        }
        string kind = t.IsEnum ? "enum" : t.IsValueType ? "struct" : t.IsInterface ? "interface" : t.IsAbstract && t.IsSealed ? "static class" : "class";
        string line = "type " + kind + " " + Name(t);
        if (kind == "class" && t.BaseType != null && t.BaseType.FullName != "System.Object") line += " : " + Name(t.BaseType);
        return line;
    }

    public static string FieldLine(FieldDefinition f)
    {
        if (f.DeclaringType.IsEnum) return "enum " + Name(f.DeclaringType) + "." + f.Name + " = " + f.Constant;
        string mods = f.HasConstant ? "const " : (f.IsStatic ? "static " : "") + (f.IsInitOnly ? "readonly " : "");
        return "field " + mods + Name(f.DeclaringType) + "." + f.Name + " : " + Name(f.FieldType) + (f.HasConstant ? " = " + Literal(f.Constant) : "");
    }

    public static string PropertyLine(PropertyDefinition p)
    {
        var accessor = p.GetMethod ?? p.SetMethod;
        var accessors = new List<string>();
        if (Visible(p.GetMethod)) accessors.Add("get;");
        if (Visible(p.SetMethod)) accessors.Add("set;");
        return "property " + (accessor.IsStatic ? "static " : "") + (accessor.IsVirtual && !accessor.IsFinal ? "virtual " : "")
            + Name(p.DeclaringType) + "." + p.Name + " : " + Name(p.PropertyType) + " { " + string.Join(" ", accessors) + " }";
    }

    public static string EventLine(EventDefinition e) =>
        "event " + (e.AddMethod.IsStatic ? "static " : "") + Name(e.DeclaringType) + "." + e.Name + " : " + Name(e.EventType);

    public static string MethodLine(MethodDefinition m)
    {
        if (m.IsConstructor) return "ctor " + Name(m.DeclaringType) + "(" + Parameters(m) + ")";
        string mods = (m.IsStatic ? "static " : "") + (m.IsVirtual && !m.IsFinal ? (m.IsNewSlot ? "virtual " : "override ") : "");
        string generics = m.HasGenericParameters ? "<" + string.Join(", ", m.GenericParameters.Select(g => g.Name)) + ">" : "";
        return "method " + mods + Name(m.DeclaringType) + "." + m.Name + generics + "(" + Parameters(m) + ") : " + Name(m.ReturnType);
    }

    static string Parameters(MethodDefinition m) => string.Join(", ", m.Parameters.Select(p =>
    {
        string prefix = "";
        var type = p.ParameterType;
        if (type.IsByReference)
        {
            prefix = p.IsOut ? "out " : "ref ";
            type = ((ByReferenceType)type).ElementType;
        }
        if (p.CustomAttributes.Any(a => a.AttributeType.FullName == "System.ParamArrayAttribute")) prefix = "params ";
        return prefix + Name(type) + " " + p.Name + (p.HasConstant ? " = " + Literal(p.Constant) : "");
    }));

    static string Literal(object value)
    {
        if (value == null) return "null";
        if (value is string s) return "\"" + s + "\"";
        if (value is bool b) return b ? "true" : "false";
        return Convert.ToString(value, System.Globalization.CultureInfo.InvariantCulture);
    }

    static readonly Dictionary<string, string> Keywords = new Dictionary<string, string>
    {
        { "System.Void", "void" }, { "System.Boolean", "bool" }, { "System.Byte", "byte" }, { "System.SByte", "sbyte" },
        { "System.Int16", "short" }, { "System.UInt16", "ushort" }, { "System.Int32", "int" }, { "System.UInt32", "uint" },
        { "System.Int64", "long" }, { "System.UInt64", "ulong" }, { "System.Single", "float" }, { "System.Double", "double" },
        { "System.String", "string" }, { "System.Object", "object" }, { "System.Char", "char" },
    };

    public static string Name(TypeReference t)
    {
        if (t is ArrayType array) return Name(array.ElementType) + "[]";
        if (t is GenericParameter) return t.Name;
        if (t is GenericInstanceType generic)
            return Name(generic.ElementType).Split('`')[0] + "<" + string.Join(", ", generic.GenericArguments.Select(Name)) + ">";
        string full = t.FullName.Replace('/', '.');
        string keyword;
        return Keywords.TryGetValue(full, out keyword) ? keyword : full;
    }

    /// <summary>Every reference from a package assembly into a stub assembly, resolved to the stub's declaration.</summary>
    sealed class UseCollector
    {
        readonly HashSet<string> _stubs;
        readonly SortedSet<string> _lines;

        public UseCollector(HashSet<string> stubs, SortedSet<string> lines)
        {
            _stubs = stubs;
            _lines = lines;
        }

        public void Collect(ModuleDefinition module)
        {
            foreach (var type in module.GetTypes())
            {
                Type(type.BaseType);
                Attributes(type.CustomAttributes);
                foreach (var f in type.Fields)
                {
                    Type(f.FieldType);
                    Attributes(f.CustomAttributes);
                }
                foreach (var p in type.Properties) Type(p.PropertyType);
                foreach (var m in type.Methods) Method(m);
            }
        }

        void Method(MethodDefinition m)
        {
            Attributes(m.CustomAttributes);
            Type(m.ReturnType);
            foreach (var p in m.Parameters) Type(p.ParameterType);
            // An override of a stub's virtual method (OnInspectorGUI) uses that method.
            if (m.IsVirtual && !m.IsNewSlot) Overridden(m);
            if (!m.HasBody) return;
            foreach (var v in m.Body.Variables) Type(v.VariableType);
            foreach (var instruction in m.Body.Instructions)
            {
                var operand = instruction.Operand;
                if (operand is MethodReference) Member((MethodReference)operand);
                else if (operand is FieldReference) Member((FieldReference)operand);
                else if (operand is TypeReference) Type((TypeReference)operand);
            }
        }

        void Overridden(MethodDefinition m)
        {
            for (var baseRef = m.DeclaringType.BaseType; baseRef != null;)
            {
                var baseType = baseRef.Resolve();
                if (baseType == null) return;
                var match = baseType.Methods.FirstOrDefault(b => b.Name == m.Name && b.IsVirtual && b.Parameters.Count == m.Parameters.Count);
                if (match != null)
                {
                    if (InStub(baseType)) _lines.Add(MethodLine(match));
                    return;
                }
                baseRef = baseType.BaseType;
            }
        }

        void Attributes(IEnumerable<CustomAttribute> attributes)
        {
            foreach (var a in attributes)
            {
                Member(a.Constructor);
                var type = a.AttributeType.Resolve();
                if (type == null || !InStub(type)) continue;
                foreach (var named in a.Properties)
                {
                    var p = type.Properties.FirstOrDefault(x => x.Name == named.Name);
                    if (p != null) _lines.Add(PropertyLine(p));
                }
                foreach (var named in a.Fields)
                {
                    var f = type.Fields.FirstOrDefault(x => x.Name == named.Name);
                    if (f != null) _lines.Add(FieldLine(f));
                }
            }
        }

        void Member(MemberReference reference)
        {
            if (reference is MethodReference method)
            {
                Type(method.DeclaringType);
                if (method is GenericInstanceMethod g)
                    foreach (var a in g.GenericArguments) Type(a);
                var definition = method.Resolve();
                if (definition == null || !InStub(definition.DeclaringType)) return;
                var property = definition.DeclaringType.Properties.FirstOrDefault(p => p.GetMethod == definition || p.SetMethod == definition);
                var evt = definition.DeclaringType.Events.FirstOrDefault(e => e.AddMethod == definition || e.RemoveMethod == definition);
                Type(definition.ReturnType);
                foreach (var p in definition.Parameters) Type(p.ParameterType);
                if (property != null) _lines.Add(PropertyLine(property));
                else if (evt != null) _lines.Add(EventLine(evt));
                else if (IsDelegate(definition.DeclaringType)) return;
                else _lines.Add(MethodLine(definition));
            }
            else if (reference is FieldReference field)
            {
                Type(field.DeclaringType);
                var definition = field.Resolve();
                if (definition == null || !InStub(definition.DeclaringType)) return;
                Type(definition.FieldType);
                _lines.Add(FieldLine(definition));
            }
        }

        void Type(TypeReference reference)
        {
            if (reference == null) return;
            if (reference is TypeSpecification spec)
            {
                if (reference is GenericInstanceType g)
                    foreach (var a in g.GenericArguments) Type(a);
                Type(spec.ElementType);
                return;
            }
            if (reference is GenericParameter) return;
            var definition = reference.Resolve();
            if (definition == null || !InStub(definition)) return;
            if (!_lines.Add(TypeLine(definition))) return;
            if (definition.IsNested) Type(definition.DeclaringType);
            // A class used is a use of its bases too: the package relies on what they declare.
            if (definition.BaseType != null) Type(definition.BaseType);
        }

        bool InStub(TypeDefinition type) => type != null && _stubs.Contains(type.Module.Assembly.Name.Name);
    }
}
