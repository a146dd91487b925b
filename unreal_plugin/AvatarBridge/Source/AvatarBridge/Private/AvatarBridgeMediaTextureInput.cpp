// NEVER COMPILED (see the header). API names checked against Epic's API reference: UMediaTexture (MediaAssets,
// a UTexture), UTexture::GetResource, FTextureResource::TextureRHI, FRHITexture::GetDesc (Extent, Format),
// FRHIGPUTextureReadback (RHIGPUReadback.h: EnqueueCopy, IsReady, Lock(RowPitchInPixels, BufferHeight), Unlock),
// ENQUEUE_RENDER_COMMAND; IImageWrapperModule::CreateImageWrapper(EImageFormat::JPEG), IImageWrapper::SetRaw
// (ERGBFormat::BGRA / RGBA, 8 bits), IImageWrapper::GetCompressed(Quality), AsyncTask(AnyBackgroundThreadNormalTask).

#include "AvatarBridgeMediaTextureInput.h"

#include "AvatarBridgeModule.h"
#include "AvatarBridgeSource.h"
#include "Async/Async.h"
#include "IImageWrapper.h"
#include "IImageWrapperModule.h"
#include "MediaTexture.h"
#include "RHIGPUReadback.h"
#include "RenderingThread.h"
#include "TextureResource.h"

#include <atomic>

namespace
{
constexpr int64 MaxPixels = 2097152;  // the bridge's image limit (docs/protocol.md 4.5)
}

// Render thread only, except the atomics.
struct FAvatarBridgeTextureReader
{
	FAvatarBridgeTextureReader(FName InSubject, IImageWrapperModule* InJpegEncoder)
		: Subject(InSubject), JpegEncoder(InJpegEncoder)
	{
	}

	// One step per call: finish a landed copy (convert and send), or start a new copy when one is due.
	void Step(FRHICommandListImmediate& RHICmdList, FTextureResource* Resource, bool bDue)
	{
		if (bInFlight)
		{
			if (!Readback->IsReady())
			{
				return;
			}
			int32 RowPitchPixels = 0;
			const uint8* Bytes = static_cast<const uint8*>(Readback->Lock(RowPitchPixels, nullptr));
			const int32 Quality = JpegQuality.load();
			if (Bytes != nullptr && Quality > 0 && JpegEncoder != nullptr)
			{
				// Packed rows for the encoder, which then runs off the render thread.
				TArray<uint8> Packed;
				Packed.SetNumUninitialized(Size.X * Size.Y * 4);
				for (int32 Y = 0; Y < Size.Y; ++Y)
				{
					FMemory::Memcpy(Packed.GetData() + static_cast<int64>(Y) * Size.X * 4,
						Bytes + static_cast<int64>(Y) * RowPitchPixels * 4, Size.X * 4);
				}
				Readback->Unlock();
				bInFlight = false;
				const ERGBFormat Order = Format == PF_B8G8R8A8 ? ERGBFormat::BGRA : ERGBFormat::RGBA;
				AsyncTask(ENamedThreads::AnyBackgroundThreadNormalTask,
					[Subject = Subject, Encoder = JpegEncoder, Packed = MoveTemp(Packed), Width = Size.X, Height = Size.Y, Order, Quality]()
					{
						TSharedPtr<IImageWrapper> Wrapper = Encoder->CreateImageWrapper(EImageFormat::JPEG);
						if (Wrapper.IsValid() && Wrapper->SetRaw(Packed.GetData(), Packed.Num(), Width, Height, Order, 8))
						{
							FAvatarBridgeSource::SendImageJPEG(Subject, Wrapper->GetCompressed(Quality));
						}
					});
				return;
			}
			if (Bytes != nullptr)
			{
				// BGRA or RGBA bytes, rows top to bottom, padded to RowPitchPixels -> packed R, G, B.
				const bool bBgra = Format == PF_B8G8R8A8;
				Rgb.SetNumUninitialized(Size.X * Size.Y * 3);
				for (int32 Y = 0; Y < Size.Y; ++Y)
				{
					const uint8* Row = Bytes + static_cast<int64>(Y) * RowPitchPixels * 4;
					uint8* Out = Rgb.GetData() + static_cast<int64>(Y) * Size.X * 3;
					for (int32 X = 0; X < Size.X; ++X)
					{
						Out[3 * X + 0] = Row[4 * X + (bBgra ? 2 : 0)];
						Out[3 * X + 1] = Row[4 * X + 1];
						Out[3 * X + 2] = Row[4 * X + (bBgra ? 0 : 2)];
					}
				}
			}
			Readback->Unlock();
			bInFlight = false;
			if (Bytes != nullptr)
			{
				FAvatarBridgeSource::SendImageRGB8(Subject, Size.X, Size.Y, Rgb);
			}
			return;
		}
		if (!bDue || Resource == nullptr || !Resource->TextureRHI.IsValid())
		{
			return;
		}
		FRHITexture* Texture = Resource->TextureRHI.GetReference();
		const FRHITextureDesc& Desc = Texture->GetDesc();
		if (Desc.Format != PF_B8G8R8A8 && Desc.Format != PF_R8G8B8A8)
		{
			WarnOnce(TEXT("the media texture is not 8-bit BGRA/RGBA (set its output to the default 8-bit format)"));
			return;
		}
		if (static_cast<int64>(Desc.Extent.X) * Desc.Extent.Y > MaxPixels || Desc.Extent.X <= 0 || Desc.Extent.Y <= 0)
		{
			WarnOnce(TEXT("the media texture is larger than the bridge accepts (2,097,152 pixels)"));
			return;
		}
		if (!Readback)
		{
			Readback = MakeUnique<FRHIGPUTextureReadback>(TEXT("AvatarBridgeMediaTexture"));
		}
		Size = Desc.Extent;
		Format = Desc.Format;
		Readback->EnqueueCopy(RHICmdList, Texture, FIntVector(0, 0, 0), 0, FIntVector(Size.X, Size.Y, 1));
		bInFlight = true;
	}

	void WarnOnce(const TCHAR* Why)
	{
		if (!bWarned.exchange(true))
		{
			UE_LOG(LogAvatarBridge, Warning, TEXT("Media texture input for %s: %s"), *Subject.ToString(), Why);
		}
	}

	const FName Subject;
	IImageWrapperModule* const JpegEncoder;  // loaded on the game thread; encoders are made per image
	std::atomic<int32> JpegQuality{0};
	TUniquePtr<FRHIGPUTextureReadback> Readback;
	FIntPoint Size = FIntPoint::ZeroValue;
	EPixelFormat Format = PF_Unknown;
	std::atomic<bool> bInFlight{false};
	std::atomic<bool> bWarned{false};
	TArray<uint8> Rgb;  // reused: no allocation per image once it has grown
};

UAvatarBridgeMediaTextureInput::UAvatarBridgeMediaTextureInput()
{
	PrimaryComponentTick.bCanEverTick = true;
}

void UAvatarBridgeMediaTextureInput::TickComponent(float DeltaTime, ELevelTick TickType, FActorComponentTickFunction* ThisTickFunction)
{
	Super::TickComponent(DeltaTime, TickType, ThisTickFunction);
	if (MediaTexture == nullptr)
	{
		return;
	}
	if (!Reader)
	{
		Reader = MakeShared<FAvatarBridgeTextureReader, ESPMode::ThreadSafe>(
			Subject, &FModuleManager::LoadModuleChecked<IImageWrapperModule>(FName("ImageWrapper")));
	}
	Reader->JpegQuality = FMath::Clamp(JpegQuality, 0, 100);
	const double Now = FPlatformTime::Seconds();
	const bool bDue = Now >= NextImageSeconds;
	if (!bDue && !Reader->bInFlight)
	{
		return;
	}
	if (bDue)
	{
		NextImageSeconds = Now + 1.0 / FMath::Max(ImagesPerSecond, 1.0f);
	}
	// Render commands run in order, so the resource pointer is still valid when this one runs (a texture
	// releases its resource through a later render command).
	ENQUEUE_RENDER_COMMAND(AvatarBridgeReadMediaTexture)(
		[Reader = Reader, Resource = MediaTexture->GetResource(), bDue](FRHICommandListImmediate& RHICmdList)
		{
			Reader->Step(RHICmdList, Resource, bDue);
		});
}

void UAvatarBridgeMediaTextureInput::EndPlay(const EEndPlayReason::Type EndPlayReason)
{
	if (Reader)
	{
		// The readback is render-thread state: let the last reference go there, after any pending step.
		ENQUEUE_RENDER_COMMAND(AvatarBridgeReleaseMediaTextureReader)([Reader = MoveTemp(Reader)](FRHICommandListImmediate&) {});
	}
	Super::EndPlay(EndPlayReason);
}
