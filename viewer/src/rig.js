// Wire conventions -> the avatar's (docs/protocol.md section 3): the wire is right-handed, +Y up, the
// avatar faces +Z with its left at +X, which is exactly a VRM 1.0 model in three.js. A VRM 0.x model
// faces -Z (three-vrm turns its scene round), so its local axes are the wire's turned 180 degrees about Y.
import * as THREE from 'three';

export const SPACING_M = 1.1; // between avatars standing side by side

// Wall clock in milliseconds, comparable with the bridge's t_publish_ns / 1e6 on the same machine.
export function wallNowMs() {
  return performance.timeOrigin + performance.now();
}

export function toVrmQuat(q, vrm0) {
  return vrm0 ? new THREE.Quaternion(-q[0], q[1], -q[2], q[3]) : new THREE.Quaternion(q[0], q[1], q[2], q[3]);
}

export function toVrmVec(p, vrm0) {
  return vrm0 ? new THREE.Vector3(-p[0], p[1], -p[2]) : new THREE.Vector3(p[0], p[1], p[2]);
}

// Unity HumanBodyBones names (the rig's `humanoid`) -> VRM humanoid bone names: the same words, lowerCamel.
export function humanoidBoneName(unity) {
  return unity ? unity[0].toLowerCase() + unity.slice(1) : '';
}

// Where the avatar stands at rest: its hips' height and its lowest foot joint's (toes, else foot), in
// the avatar's own scene, which the motion's floor contact is mapped onto; and its head's rest rotation.
export function restPose(vrm) {
  vrm.scene.updateMatrixWorld(true);
  const at = new THREE.Vector3();
  const height = (name) => {
    const node = vrm.humanoid.getRawBoneNode(name);
    if (!node) return null;
    node.getWorldPosition(at);
    return at.y;
  };
  const contacts = ['leftToes', 'rightToes', 'leftFoot', 'rightFoot'].map(height).filter((y) => y !== null);
  // The head's rest rotation in the scene (a VRM 0.x model's is turned round): its pose is reported from it.
  const headRest = vrm.humanoid.getRawBoneNode('head').getWorldQuaternion(new THREE.Quaternion());
  return { hipsY: height('hips'), contactY: Math.min(...contacts), headRestInverse: headRest.invert() };
}

// VRM presets standing in for ARKit shapes on avatars without ARKit-named ("perfect sync") expressions.
const PRESET_FROM_ARKIT = [
  ['blinkLeft', ['EyeBlinkLeft']],
  ['blinkRight', ['EyeBlinkRight']],
  ['aa', ['JawOpen']],
  ['ou', ['MouthPucker']],
  ['oh', ['MouthFunnel']],
  ['happy', ['MouthSmileLeft', 'MouthSmileRight']],
  ['sad', ['MouthFrownLeft', 'MouthFrownRight']],
  ['surprised', ['EyeWideLeft', 'EyeWideRight']],
];
const VOWELS = ['aa', 'ih', 'ou', 'ee', 'oh']; // a speech frame's `vowels`: VRM A, I, U, E, O

// [expression name, weight] pairs for a frame's ARKit weights (keys as the rig names them), its vowels,
// and the avatar's expressions (lower-case name -> name). Eye-look shapes are left to the lookAt when the
// frame carries gaze, so the eyes do not turn twice.
export function arkitToExpression(weights, vowels, expressions, hasGaze) {
  const out = [];
  let perfectSync = false;
  for (const [name, value] of Object.entries(weights)) {
    if (hasGaze && name.toLowerCase().startsWith('eyelook')) continue;
    const expression = expressions.get(name.toLowerCase());
    if (expression) { out.push([expression, value]); perfectSync = true; }
  }
  if (perfectSync) return out;
  for (const [preset, sources] of PRESET_FROM_ARKIT) {
    const expression = expressions.get(preset.toLowerCase());
    if (!expression) continue;
    const value = sources.reduce((sum, n) => sum + (weights[n] || 0), 0) / sources.length;
    out.push([expression, value]);
  }
  if (vowels && vowels.length === 5) {
    VOWELS.forEach((preset, i) => {
      const expression = expressions.get(preset);
      if (expression) out.push([expression, vowels[i]]);
    });
  }
  return out;
}
