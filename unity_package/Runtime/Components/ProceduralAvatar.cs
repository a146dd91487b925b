using AvatarBridge.Core.Rig;
using UnityEngine;

namespace AvatarBridge
{
    /// <summary>
    /// Builds, at run time and without any asset, a humanoid that HumanoidDriver and BlendshapeDriver
    /// can drive: the core's ProceduralHumanoid skeleton as Transforms with a Mecanim Avatar made by
    /// AvatarBuilder.BuildHumanAvatar, capsules along the limbs, and the core's ProceduralFace (52
    /// ARKit-named blendshapes) as a SkinnedMeshRenderer on the head. For the demo and play-mode tests,
    /// and as a known-good rig to compare a problem avatar with.
    /// </summary>
    public static class ProceduralAvatar
    {
        /// <summary>The avatar's root (with its Animator and Avatar); face is the renderer holding the 52 shapes.</summary>
        public static GameObject Build(string name, out SkinnedMeshRenderer face)
        {
            var root = new GameObject(name);
            var bones = new Transform[ProceduralHumanoid.Bones.Length];
            for (int b = 0; b < bones.Length; b++)
            {
                bones[b] = new GameObject(ProceduralHumanoid.Bones[b]).transform;
                int parent = ProceduralHumanoid.Parents[b];
                bones[b].SetParent(parent < 0 ? root.transform : bones[parent], false);
                bones[b].localPosition = ProceduralHumanoid.LocalPosition(b).ToUnity();
                bones[b].localRotation = ProceduralHumanoid.LocalRotation(b).ToUnity();
            }

            var animator = root.AddComponent<Animator>();
            animator.avatar = BuildAvatar(root, bones);

            // A primitive lends its pipeline's default material (built-in, URP or HDRP alike).
            Material material = null;
            for (int b = 1; b < bones.Length; b++)
            {
                var limb = Limb(bones[ProceduralHumanoid.Parents[b]], bones[b]);
                if (material == null) material = limb.GetComponent<Renderer>().sharedMaterial;
            }
            face = Face(bones[ProceduralHumanoid.IndexOf("Head")], material);
            return root;
        }

        static Avatar BuildAvatar(GameObject root, Transform[] bones)
        {
            var human = new HumanBone[bones.Length];
            var skeleton = new SkeletonBone[bones.Length + 1];
            skeleton[0] = new SkeletonBone { name = root.name, position = Vector3.zero, rotation = Quaternion.identity, scale = Vector3.one };
            for (int b = 0; b < bones.Length; b++)
            {
                // Transform and humanoid names are the same here; a real rig maps its own names.
                human[b] = new HumanBone { boneName = bones[b].name, humanName = bones[b].name, limit = new HumanLimit { useDefaultValues = true } };
                skeleton[b + 1] = new SkeletonBone { name = bones[b].name, position = bones[b].localPosition, rotation = bones[b].localRotation, scale = Vector3.one };
            }
            var description = new HumanDescription { human = human, skeleton = skeleton };
            var avatar = AvatarBuilder.BuildHumanAvatar(root, description);
            avatar.name = root.name;
            if (!avatar.isValid) Debug.LogWarning("ProceduralAvatar: AvatarBuilder did not accept the generated skeleton.");
            return avatar;
        }

        static GameObject Limb(Transform from, Transform to)
        {
            var capsule = GameObject.CreatePrimitive(PrimitiveType.Capsule);
            capsule.name = from.name + " limb";
            var start = from.position;
            var end = to.position;
            float length = Vector3.Distance(start, end);
            capsule.transform.position = (start + end) * 0.5f;
            capsule.transform.rotation = Quaternion.FromToRotation(Vector3.up, end - start);
            capsule.transform.localScale = new Vector3(0.07f, Mathf.Max(length, 0.02f) * 0.5f, 0.07f); // a capsule is 2 units tall
            capsule.transform.SetParent(from, true);
            return capsule;
        }

        static SkinnedMeshRenderer Face(Transform head, Material material)
        {
            var data = ProceduralFace.Build();
            var mesh = new Mesh { name = "Procedural face" };
            mesh.vertices = Vectors(data.Vertices);
            mesh.triangles = data.Triangles;
            for (int k = 0; k < data.ShapeNames.Length; k++)
                mesh.AddBlendShapeFrame(data.ShapeNames[k], 100f, Vectors(data.Deltas[k]), null, null);
            mesh.RecalculateNormals();
            mesh.RecalculateBounds();

            var go = new GameObject("Face");
            go.transform.position = head.position + ProceduralHumanoid.FaceOffset.ToUnity();
            go.transform.rotation = head.root.rotation; // facing the avatar's front, not the head bone's odd axes
            go.transform.SetParent(head, true);
            var renderer = go.AddComponent<SkinnedMeshRenderer>();
            renderer.sharedMesh = mesh;
            renderer.sharedMaterial = material;
            return renderer;
        }

        static Vector3[] Vectors(Vec3[] values)
        {
            var result = new Vector3[values.Length];
            for (int i = 0; i < values.Length; i++) result[i] = values[i].ToUnity();
            return result;
        }
    }
}
