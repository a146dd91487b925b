// What an Avatar Bridge Live Link source connects to and which sessions it opens. Persisted in Live Link
// presets as the source's connection string (JSON of FAvatarBridgeConnectionSettings).

#pragma once

#include "CoreMinimal.h"

#include "AvatarBridgeSettings.generated.h"

UENUM(BlueprintType)
enum class EAvatarBridgePipeline : uint8
{
	/** Camera images in, FLAME + ARKit-52 face curves and head/jaw rotation out. */
	Face,
	/** Music (audio or AIST++ features) in, a 24-joint SMPL skeleton out. */
	Motion,
	/** A voice (audio) in, a face subject out: ARKit mouth curves, 15 viseme curves, VRM A/I/U/E/O and Voice. */
	Speech,
};

/** One session the source opens on the bridge and publishes as one Live Link subject. */
USTRUCT(BlueprintType)
struct AVATARBRIDGE_API FAvatarBridgeSessionSettings
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	EAvatarBridgePipeline Pipeline = EAvatarBridgePipeline::Face;

	/** Live Link subject name (one subject per session). None: AvatarBridgeFace / AvatarBridgeBody / AvatarBridgeSpeech (numbered when repeated). */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	FName SubjectName;

	/** A model name from the bridge's model list; empty: the pipeline's default model. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	FString Model;

	/** Face: have the bridge send ARKit-52 weights (otherwise the plugin maps FLAME to ARKit itself, roughly). */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge|Face")
	bool bBlendshapes = true;

	/** Face: One-Euro filtering of the face parameters on the bridge. Speech: the attack/release filter on the mouth. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge|Face")
	bool bFaceSmoothing = true;

	/** Face and Speech: mirror the face (Left/Right curves swap, head yaw and roll change sign), for a camera shown as a mirror. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge|Face")
	bool bMirror = false;

	/** Face: track the body, arms, hands and fingers from the same images too (the bridge's `body: true`, needs
	 *  `avatar-bridge models install body`); the face subject then also carries the 50 humanoid bones (Hips ... fingers). */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge|Face")
	bool bBody = false;

	/** Motion: dance style, one of the model's styles; empty: the bridge's default ("house"). */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge|Motion")
	FString Style;

	/** Motion: low-pass strength on joint rotations, 0 (off) to 0.99. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge|Motion", meta = (ClampMin = "0.0", ClampMax = "0.99"))
	float MotionSmoothing = 0.5f;
};

USTRUCT(BlueprintType)
struct AVATARBRIDGE_API FAvatarBridgeConnectionSettings
{
	GENERATED_BODY()

	FAvatarBridgeConnectionSettings();

	/** Host running `avatar-bridge serve`. The bridge listens on 127.0.0.1 unless started with --host. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	FString Host = TEXT("127.0.0.1");

	/** The bridge's request (ROUTER) port. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge", meta = (ClampMin = "1", ClampMax = "65535"))
	int32 RequestPort = 5570;

	/** The bridge's frames (PUB) port; 0: the one the bridge announces in its hello reply. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge", meta = (ClampMin = "0", ClampMax = "65535"))
	int32 FramesPort = 0;

	/**
	 * CURVE (for a bridge started with --curve-secret-key): the bridge's public key file (server.key from
	 * `avatar-bridge keys`). Empty: plain, unencrypted connection. Needs the libzmq build of the plugin
	 * (Source/ThirdParty/ZeroMQ/README.md); the default build reports that it cannot.
	 */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge|Security")
	FString CurveServerPublicKeyFile;

	/**
	 * CURVE: this client's secret key file (NAME.key_secret), when the bridge admits only listed client keys
	 * (--curve-client-keys). Empty: a fresh key pair per connection.
	 */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge|Security")
	FString CurveClientSecretKeyFile;

	/** Sessions to open; each becomes a subject, reopened automatically after a bridge restart. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	TArray<FAvatarBridgeSessionSettings> Sessions;

	/** Also publish sessions other clients open (e.g. `avatar-bridge harness`), named <pipeline>_<session id>. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	bool bObserveOtherSessions = true;

	/**
	 * Interpolate to the engine tick in the plugin's jitter buffer (one smooth frame per tick; the source's
	 * evaluation mode is then Latest, so Live Link adds no second buffer). Off: every bridge frame is pushed from
	 * the receive thread with its own time and timecode, and the source's Live Link settings (Engine Time by
	 * default) buffer and interpolate.
	 */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	bool bInterpolateInPlugin = true;

	/** JSON, stored as the Live Link source's connection string. */
	FString ToConnectionString() const;
	/** False (and Out untouched) when the string is not such JSON. */
	static bool FromConnectionString(const FString& ConnectionString, FAvatarBridgeConnectionSettings& Out);
};
